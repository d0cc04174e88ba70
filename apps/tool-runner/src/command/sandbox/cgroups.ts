import { readFileSync } from 'node:fs';
import { access, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';

export type Controller = 'pids' | 'memory' | 'cpu';
const CONTROLLERS: readonly Controller[] = ['pids', 'memory', 'cpu'];

export interface CgroupLimits {
  pids: number;
  memoryBytes: number;
  cpus: number;
}

/** One call's cgroups (one per available controller). */
export interface CallCgroup {
  /** `cgroup.procs` files the launcher writes its pid into. */
  procsFiles: string[];
  /** How many times the memory limit killed a process of the call. */
  oomKills(): number;
  /**
   * SIGKILLs whatever is still in the cgroups, then removes them in the background (retrying while
   * the kernel reaps them). Once; later calls do nothing.
   */
  destroy(): void;
}

/**
 * Per-call cgroup v1 limits (measured on these machines: the pids, memory and cpu controllers work
 * as root; cgroup v2 is not delegated). Each call's cgroups are created beneath the runner's own
 * cgroup in each hierarchy (`<own>/skald-runner-<pid>/<call>`), so the limits of whatever contains
 * the runner still apply, and nothing outside the runner's subtree is touched.
 */
export class Cgroups {
  private readonly pending = new Set<Promise<void>>();

  private constructor(
    /** Controller → the runner's parent directory for call cgroups. */
    private readonly parents: ReadonlyMap<Controller, string>,
    private readonly limits: CgroupLimits,
    private readonly memsw: boolean,
  ) {}

  /** No cgroups at all (`SKALD_SANDBOX_CGROUPS=off`): the runner uses rlimits only. */
  static none(): Cgroups {
    return new Cgroups(new Map(), { pids: 0, memoryBytes: 0, cpus: 0 }, false);
  }

  /** The controllers available to this process, or an empty set (the runner falls back to rlimits). */
  static async detect(limits: CgroupLimits, root = '/sys/fs/cgroup'): Promise<Cgroups> {
    const own = await ownCgroups().catch(() => new Map<string, string>());
    const parents = new Map<Controller, string>();
    let memsw = false;
    for (const c of CONTROLLERS) {
      const rel = own.get(c);
      if (rel === undefined) continue;
      const hierarchy = join(root, c, rel);
      const parent = join(hierarchy, `skald-runner-${process.pid}`);
      try {
        // Only inside an existing cgroup hierarchy (its control files prove it), never a plain directory.
        await access(join(hierarchy, 'cgroup.procs'));
        await sweepDeadRunners(hierarchy);
        await mkdir(parent).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== 'EEXIST') throw e;
        });
        // A probe child proves that limits can be written here.
        const probe = join(parent, 'probe');
        await mkdir(probe).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== 'EEXIST') throw e;
        });
        try {
          if (c === 'pids') await writeFile(join(probe, 'pids.max'), '16');
          if (c === 'memory') {
            await writeFile(join(probe, 'memory.limit_in_bytes'), String(64 * 1024 ** 2));
            memsw = await writeFile(join(probe, 'memory.memsw.limit_in_bytes'), String(64 * 1024 ** 2)).then(
              () => true,
              () => false,
            );
          }
          if (c === 'cpu') await writeFile(join(probe, 'cpu.cfs_quota_us'), '100000');
        } finally {
          await rmdir(probe).catch(() => undefined);
        }
        parents.set(c, parent);
      } catch {
        await rmdir(parent).catch(() => undefined);
      }
    }
    return new Cgroups(parents, limits, memsw);
  }

  get controllers(): Controller[] {
    return [...this.parents.keys()];
  }

  has(c: Controller): boolean {
    return this.parents.has(c);
  }

  /** A call's cgroups, limits written (a few mkdir and writes: done before the call, see `Launchers`). */
  async create(callId: string = randomUUID()): Promise<CallCgroup> {
    const dirs: { c: Controller; dir: string }[] = [];
    const name = callId.replace(/[^a-zA-Z0-9-]/g, '');
    try {
      for (const [c, parent] of this.parents) {
        const dir = join(parent, name);
        await mkdir(dir);
        dirs.push({ c, dir });
        switch (c) {
          case 'pids':
            await writeFile(join(dir, 'pids.max'), String(this.limits.pids));
            break;
          case 'memory':
            await writeFile(join(dir, 'memory.limit_in_bytes'), String(this.limits.memoryBytes));
            // Swap counts too, so the limit cannot be dodged by swapping out.
            if (this.memsw) await writeFile(join(dir, 'memory.memsw.limit_in_bytes'), String(this.limits.memoryBytes));
            break;
          case 'cpu':
            await writeFile(join(dir, 'cpu.cfs_period_us'), '100000');
            await writeFile(join(dir, 'cpu.cfs_quota_us'), String(Math.round(this.limits.cpus * 100_000)));
            break;
        }
      }
    } catch (e) {
      await destroyDirs(dirs.map((d) => d.dir));
      throw e;
    }
    const memory = dirs.find((d) => d.c === 'memory')?.dir;
    let destroyed = false;
    return {
      procsFiles: dirs.map((d) => join(d.dir, 'cgroup.procs')),
      oomKills: () => {
        if (!memory) return 0;
        const m = /^oom_kill (\d+)$/m.exec(readPseudoFile(join(memory, 'memory.oom_control')));
        return m ? Number(m[1]) : 0;
      },
      destroy: () => {
        if (destroyed) return;
        destroyed = true;
        const paths = dirs.map((d) => d.dir);
        // Every process of the call is in each of its cgroups: one list to read.
        if (paths.length > 0) killPids(readPseudoFile(join(paths[0], 'cgroup.procs')));
        // Removing the directories waits for the kernel to reap; nobody needs to wait for that.
        const removal: Promise<void> = destroyDirs(paths).finally(() => {
          this.pending.delete(removal);
        });
        this.pending.add(removal);
      },
    };
  }

  /** Removes the runner's parent directories (at shutdown, once the call cgroups are gone). */
  async dispose(): Promise<void> {
    await Promise.allSettled([...this.pending]);
    for (const parent of this.parents.values()) await rmdir(parent).catch(() => undefined);
  }
}

/** Removes what runners that died (SIGKILL, OOM) left in a hierarchy: their processes and cgroups. */
async function sweepDeadRunners(hierarchy: string): Promise<void> {
  const entries = await readdir(hierarchy, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const m = /^skald-runner-(\d+)$/.exec(entry.name);
    if (!m || !entry.isDirectory() || Number(m[1]) === process.pid || alive(Number(m[1]))) continue;
    const parent = join(hierarchy, entry.name);
    const calls = await readdir(parent, { withFileTypes: true }).catch(() => []);
    await destroyDirs(calls.filter((e) => e.isDirectory()).map((e) => join(parent, e.name)));
    await rmdir(parent).catch(() => undefined);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A cgroup control file, read synchronously: the kernel answers from memory in ~20 µs, where an
 * async read costs four thread-pool round trips (~0.3 ms) between a command's exit and its reply.
 */
function readPseudoFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** SIGKILLs the pids of a `cgroup.procs` listing (the launcher, bwrap and anything they started). */
function killPids(procs: string): void {
  for (const line of procs.split('\n')) {
    if (line === '') continue;
    try {
      process.kill(Number(line), 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

async function killMembers(dir: string): Promise<void> {
  killPids(await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => ''));
}

async function destroyDirs(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    for (let attempt = 0; attempt < 100; attempt++) {
      await killMembers(dir);
      const removed = await rmdir(dir).then(
        () => true,
        (e: NodeJS.ErrnoException) => e.code === 'ENOENT',
      );
      if (removed) break;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/** `/proc/self/cgroup`: controller → this process's cgroup path in that v1 hierarchy. */
async function ownCgroups(): Promise<Map<string, string>> {
  const text = await readFile('/proc/self/cgroup', 'utf8');
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const [, controllers, path] = line.split(':');
    if (!controllers || path === undefined) continue;
    for (const c of controllers.split(',')) out.set(c, path);
  }
  return out;
}
