import { readFileSync, writeFileSync } from 'node:fs';
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
 * Per-call cgroup limits, v1 or v2. v1 (measured on these machines: the pids, memory and cpu
 * controllers work as root): each call's cgroups are created beneath the runner's own cgroup in each
 * hierarchy (`<own>/skald-runner-<pid>/<call>`). v2 (at the root of a writable cgroup namespace:
 * a container or pod whose /sys/fs/cgroup is writable): the processes of the runner's own cgroup move to a
 * leaf `<own>/skald-service` (a cgroup with children may hold no processes), the controllers are
 * enabled below `<own>` and each call gets `<own>/skald-runner-<pid>/<call>` with `pids.max`,
 * `memory.max` (+ `memory.swap.max` 0) and `cpu.max`, killed through `cgroup.kill`. Either way the
 * limits of whatever contains the runner still apply, and nothing outside its subtree is touched.
 */
export class Cgroups {
  private readonly pending = new Set<Promise<void>>();

  private constructor(
    /** Controller → the runner's parent directory for call cgroups (one directory for all in v2). */
    private readonly parents: ReadonlyMap<Controller, string>,
    private readonly limits: CgroupLimits,
    private readonly memsw: boolean,
    /** Which cgroup interface, 0 for none. */
    readonly version: 0 | 1 | 2 = parents.size > 0 ? 1 : 0,
  ) {}

  /** No cgroups at all (`SKALD_SANDBOX_CGROUPS=off`): the runner uses rlimits only. */
  static none(): Cgroups {
    return new Cgroups(new Map(), { pids: 0, memoryBytes: 0, cpus: 0 }, false);
  }

  /**
   * The controllers available to this process (v1 first, then v2), or an empty set (the runner
   * falls back to rlimits). `selfCgroup` is `/proc/self/cgroup`'s text (a test passes its own).
   */
  static async detect(
    limits: CgroupLimits,
    root = '/sys/fs/cgroup',
    selfCgroup?: string,
    pid = process.pid,
  ): Promise<Cgroups> {
    const own = await ownCgroups(selfCgroup).catch(() => new Map<string, string>());
    const v1 = await Cgroups.detectV1(limits, root, own);
    if (v1.version === 1) return v1;
    // v2 only at the root of a cgroup namespace (a container's or a pod's own cgroup): anywhere else
    // (a login session, a systemd unit) the cgroup is not the runner's to reorganise.
    const unified = own.get('');
    return (unified === '/' && (await Cgroups.detectV2(limits, root, pid))) || v1;
  }

  private static async detectV1(limits: CgroupLimits, root: string, own: Map<string, string>): Promise<Cgroups> {
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

  /** cgroup v2 at `own` (the runner's cgroup), when it is writable and offers pids, memory or cpu; else null. */
  private static async detectV2(limits: CgroupLimits, own: string, pid: number): Promise<Cgroups | null> {
    try {
      const available = (await readFile(join(own, 'cgroup.controllers'), 'utf8')).split(/\s+/);
      const wanted = CONTROLLERS.filter((c) => available.includes(c));
      if (wanted.length === 0) return null;
      await sweepDeadRunners(own);
      // No internal processes: whatever is in the runner's cgroup (the runner) moves to a leaf first.
      const service = join(own, 'skald-service');
      await mkdir(service).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'EEXIST') throw e;
      });
      const procs = (await readFile(join(own, 'cgroup.procs'), 'utf8')).split('\n').filter((l) => l !== '');
      for (const p of procs.length > 0 ? procs : [String(pid)])
        await writeFile(join(service, 'cgroup.procs'), p).catch(() => undefined);
      const enable = wanted.map((c) => `+${c}`).join(' ');
      await writeFile(join(own, 'cgroup.subtree_control'), enable);
      const parent = join(own, `skald-runner-${pid}`);
      await mkdir(parent).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'EEXIST') throw e;
      });
      await writeFile(join(parent, 'cgroup.subtree_control'), enable);
      // A probe child proves that limits can be written here.
      const probe = join(parent, 'probe');
      await mkdir(probe).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'EEXIST') throw e;
      });
      try {
        if (wanted.includes('pids')) await writeFile(join(probe, 'pids.max'), '16');
        if (wanted.includes('memory')) await writeFile(join(probe, 'memory.max'), String(64 * 1024 ** 2));
        if (wanted.includes('cpu')) await writeFile(join(probe, 'cpu.max'), '100000 100000');
      } finally {
        await rmdir(probe).catch(() => undefined);
      }
      return new Cgroups(new Map(wanted.map((c) => [c, parent])), limits, false, 2);
    } catch {
      return null;
    }
  }

  get controllers(): Controller[] {
    return [...this.parents.keys()];
  }

  has(c: Controller): boolean {
    return this.parents.has(c);
  }

  /** A call's cgroups, limits written (a few mkdir and writes: done before the call, see `Launchers`). */
  async create(callId: string = randomUUID()): Promise<CallCgroup> {
    if (this.version === 2) return this.createV2(callId);
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

  /** One v2 cgroup for the call with every available limit. */
  private async createV2(callId: string): Promise<CallCgroup> {
    const parent = [...this.parents.values()][0];
    const dir = join(parent, callId.replace(/[^a-zA-Z0-9-]/g, ''));
    await mkdir(dir);
    try {
      if (this.parents.has('pids')) await writeFile(join(dir, 'pids.max'), String(this.limits.pids));
      if (this.parents.has('memory')) {
        await writeFile(join(dir, 'memory.max'), String(this.limits.memoryBytes));
        // Swap counts too, so the limit cannot be dodged by swapping out (absent without swap accounting).
        await writeFile(join(dir, 'memory.swap.max'), '0').catch(() => undefined);
      }
      if (this.parents.has('cpu'))
        await writeFile(join(dir, 'cpu.max'), `${Math.round(this.limits.cpus * 100_000)} 100000`);
    } catch (e) {
      await destroyDirs([dir]);
      throw e;
    }
    let destroyed = false;
    return {
      procsFiles: [join(dir, 'cgroup.procs')],
      oomKills: () => {
        if (!this.parents.has('memory')) return 0;
        const m = /^oom_kill (\d+)$/m.exec(readPseudoFile(join(dir, 'memory.events')));
        return m ? Number(m[1]) : 0;
      },
      destroy: () => {
        if (destroyed) return;
        destroyed = true;
        // cgroup.kill (Linux 5.14) kills every member atomically, forks in flight included.
        try {
          writeFileSync(join(dir, 'cgroup.kill'), '1');
        } catch {
          killPids(readPseudoFile(join(dir, 'cgroup.procs')));
        }
        const removal: Promise<void> = destroyDirs([dir]).finally(() => {
          this.pending.delete(removal);
        });
        this.pending.add(removal);
      },
    };
  }

  /** Removes the runner's parent directories (at shutdown, once the call cgroups are gone). */
  async dispose(): Promise<void> {
    await Promise.allSettled([...this.pending]);
    for (const parent of new Set(this.parents.values())) await rmdir(parent).catch(() => undefined);
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

/** `/proc/self/cgroup`: controller → this process's cgroup path in that v1 hierarchy; `''` → the v2 one. */
async function ownCgroups(given?: string): Promise<Map<string, string>> {
  const text = given ?? (await readFile('/proc/self/cgroup', 'utf8'));
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    // `<id>:<controllers>:<path>`; the path itself may contain colons.
    const i = line.indexOf(':');
    const j = line.indexOf(':', i + 1);
    if (i < 0 || j < 0) continue;
    const [hierarchy, controllers, path] = [line.slice(0, i), line.slice(i + 1, j), line.slice(j + 1)];
    if (hierarchy === '0' && controllers === '') out.set('', path);
    else if (controllers) for (const c of controllers.split(',')) out.set(c, path);
  }
  return out;
}
