import { Inject, Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { Stats, statSync } from 'node:fs';
import { access, constants as FS, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readiness } from '@skald/service-kit/ops';
import { ToolError } from '../tool-error';
import { diskUsage, Usage } from './disk-usage';
import { directoryIdentity, Jail } from './jail';
import { KeyedMutex } from './keyed-mutex';
import { WorkspaceLock } from './workspace-lock';

export const WORKSPACE_OPTIONS = Symbol('WORKSPACE_OPTIONS');
export interface WorkspaceOptions {
  /** Directory holding one workspace per user. */
  root: string;
  /** Bytes per workspace (apparent size of its regular files). */
  quota: number;
  /** Inodes per workspace: files, directories, symlinks (default 100000). */
  inodes?: number;
  /** How often the usage of a workspace is sampled while a command runs in it, in ms (default 250). */
  sampleMs?: number;
  /** How long a measured usage is trusted before the tree is walked again (commands change it too). */
  usageTtlMs?: number;
  /**
   * Regular files up to this many bytes are read by the file tools with synchronous calls on the
   * event loop (`Jail.readSmallSync`), and a kept jail is checked with a synchronous `stat`; 0 turns
   * both off (every call through the thread pool, for a file system slow enough that a few blocking
   * calls would stall the runner). Default `DEFAULT_SYNC_READ_BYTES`.
   */
  syncReadBytes?: number;
}

const USER_DIR = /^[0-9a-fA-F-]{1,64}$/;
/** Jails kept, most recently used last; past this the least recently used is forgotten. */
const KEPT_JAILS = 4096;
export const DEFAULT_INODE_QUOTA = 100_000;
export const DEFAULT_SAMPLE_MS = 250;
/**
 * Walks one measurement makes at most while a walk answers `unmeasured` (a tree changing under it):
 * past them the measurement answers `unmeasured`, which the quota counts as over (fail closed).
 */
export const WALK_ATTEMPTS = 3;

/**
 * The usage of a workspace, walked again while the walk could not measure it (at most
 * `WALK_ATTEMPTS` walks). Never rejects: a walk that throws answers `unmeasured` too, so a sample
 * always has an answer and a failed one counts as over quota.
 */
export async function measureTree(
  root: string,
  limits: { bytes: number; inodes: number },
  walk: typeof diskUsage = diskUsage,
): Promise<Usage> {
  let u: Usage = { bytes: 0, inodes: 0, partial: true, unmeasured: 'not walked' };
  for (let attempt = 0; attempt < WALK_ATTEMPTS; attempt++) {
    u = await walk(root, limits).catch((e: unknown): Usage => ({
      bytes: 0,
      inodes: 0,
      partial: true,
      unmeasured: `the walk failed (${String(e)})`,
    }));
    if (u.unmeasured === undefined) return u;
  }
  return u;
}
/** 64 KiB: a local disk reads this in tens of µs; a page-cache hit in a few. */
export const DEFAULT_SYNC_READ_BYTES = 64 * 1024;

/** A workspace's usage beside its quota, for the errors the model reads. */
export function describeUsage(u: Usage, quota: { bytes: number; inodes: number }): string {
  if (u.unmeasured !== undefined)
    return (
      `the workspace's usage could not be measured (${u.unmeasured}), so it counts as over its quota ` +
      `until a walk succeeds (quota ${formatBytes(quota.bytes)} / ${quota.inodes} files and directories)`
    );
  const more = u.partial ? 'more than ' : '';
  return (
    `${more}${formatBytes(u.bytes)} / ${more}${u.inodes} files ` +
    `(quota ${formatBytes(quota.bytes)} / ${quota.inodes} files and directories)`
  );
}

/** Whether a usage is at or over either quota (nothing more fits); an unmeasured usage is (fail closed). */
export function full(u: Usage, quota: { bytes: number; inodes: number }): boolean {
  return u.unmeasured !== undefined || u.bytes >= quota.bytes || u.inodes >= quota.inodes;
}

/** Whether a usage has passed either quota; an unmeasured usage has (fail closed). */
export function over(u: Usage, quota: { bytes: number; inodes: number }): boolean {
  return u.unmeasured !== undefined || u.bytes > quota.bytes || u.inodes > quota.inodes;
}

interface Sampler {
  listeners: Set<(u: Usage) => void>;
  timer?: NodeJS.Timeout;
}

/**
 * Per-user workspaces `<root>/<userId>/` (mode 0700, created on first use), the jail that opens
 * files inside them, the write lock of each workspace and its disk quota.
 */
@Injectable()
export class WorkspacesService implements OnModuleInit {
  private readonly usage = new Map<string, Usage & { at: number }>();
  private readonly samplers = new Map<string, Sampler>();
  /** Each workspace's jail, kept while its path names the same directory (see `jail`). */
  private readonly jails = new Map<string, Jail>();
  private readonly writes = new KeyedMutex();
  private readonly usageTtlMs: number;

  constructor(
    @Inject(WORKSPACE_OPTIONS) private readonly options: WorkspaceOptions,
    @Optional() private readonly readiness?: Readiness,
    @Optional() private readonly replicas?: WorkspaceLock,
  ) {
    this.usageTtlMs = options.usageTtlMs ?? 30_000;
  }

  /** Files up to this size are read on the event loop (0: never). */
  get syncReadBytes(): number {
    return this.options.syncReadBytes ?? DEFAULT_SYNC_READ_BYTES;
  }

  get quota(): number {
    return this.options.quota;
  }

  /** Both quotas of a workspace. */
  get limits(): { bytes: number; inodes: number } {
    return { bytes: this.options.quota, inodes: this.options.inodes ?? DEFAULT_INODE_QUOTA };
  }

  async onModuleInit(): Promise<void> {
    await mkdir(this.options.root, { recursive: true, mode: 0o700 });
    this.readiness?.register('workspaces', async () => {
      await access(this.options.root, FS.W_OK).catch(() => {
        throw new Error(`workspace root is not writable: ${this.options.root}`);
      });
    });
  }

  /**
   * The user's jail; the workspace directory is created on first use. An existing workspace is
   * found without a `mkdir` (it was two system calls on every tool call); anything else — missing,
   * removed underneath, or not a directory — takes the creating path, which fails as it always did
   * for what is not a directory. A jail once found is kept (at most `KEPT_JAILS`) while the path
   * still names the same directory: a later call costs one `stat`.
   */
  async jail(userId: string): Promise<Jail> {
    if (!USER_DIR.test(userId)) throw new ToolError('invalid_argument', 'invalid user id');
    const dir = join(this.options.root, userId);
    const kept = this.jails.get(userId);
    if (kept) {
      // One stat (following a symlinked workspace) tells whether the path still names the directory
      // the jail was resolved to; a `realpath` walk of the whole path was ~10 system calls a call.
      // Synchronous unless turned off (`syncReadBytes`): one call, no thread-pool hop.
      const st = this.syncReadBytes > 0 ? statOrNull(dir) : await stat(dir).catch(() => null);
      this.jails.delete(userId);
      if (st?.isDirectory() && directoryIdentity(st) === kept.identity) return this.keep(userId, kept);
    }
    const found = await Jail.at(dir).catch(() => null);
    if (found) return this.keep(userId, found);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return this.keep(userId, await Jail.at(dir));
  }

  private keep(userId: string, jail: Jail): Jail {
    this.jails.set(userId, jail);
    if (this.jails.size > KEPT_JAILS) this.jails.delete(this.jails.keys().next().value as string);
    return jail;
  }

  /** Host directory of a user's workspace (for running commands in it). */
  hostDir(userId: string): string {
    if (!USER_DIR.test(userId)) throw new ToolError('invalid_argument', 'invalid user id');
    return join(this.options.root, userId);
  }

  /**
   * Runs a write of one user's workspace with the workspace's writes serialised (quota accounting):
   * in this process by a mutex, across replicas by the workspace lock (a Postgres advisory lock)
   * when one is configured. Measured usage is cached per replica, so another replica's writes are
   * seen within `usageTtlMs`.
   */
  async exclusive<T>(userId: string, task: () => Promise<T>): Promise<T> {
    const replicas = this.replicas;
    return this.writes.run(userId, () => (replicas ? replicas.run(userId, task) : task()));
  }

  /**
   * Throws `quota_exceeded` unless growing the workspace by `delta` bytes stays within the quota.
   * Shrinking is always allowed. Call inside `exclusive`, then `commit` once written. (New entries
   * are bounded while the file is opened: `Jail.openWrite` with a budget from `inodesFull`.)
   */
  async ensureRoom(userId: string, jail: Jail, delta: number, path: string): Promise<void> {
    if (delta <= 0) return;
    const used = await this.used(userId, jail);
    if (used.bytes + delta > this.options.quota) {
      throw new ToolError(
        'quota_exceeded',
        `workspace quota exceeded: writing ${path} needs ${formatBytes(delta)} more, but the workspace uses ` +
          `${formatBytes(used.bytes)} of its ${formatBytes(this.options.quota)} quota. Delete files to make room.`,
      );
    }
  }

  /** The error of a write that would create an entry (file or directory) past the inode quota. */
  inodesFull(path: string, used: { inodes: number }): ToolError {
    return new ToolError(
      'quota_exceeded',
      `workspace quota exceeded: writing ${path} creates new files or directories, but the workspace holds ` +
        `${used.inodes} of its ${this.limits.inodes} files and directories. Delete files to make room.`,
    );
  }

  /** Records a completed write of `delta` bytes that created `newInodes` entries. */
  commit(userId: string, delta: number, newInodes = 0): void {
    const known = this.usage.get(userId);
    if (known) {
      known.bytes = Math.max(0, known.bytes + delta);
      known.inodes += newInodes;
    }
  }

  /**
   * Records a completed removal of `bytes` (regular files) and `inodes` entries (walks already under
   * way no longer fill the cache: they may have counted what is gone). A measured usage
   * that was a lower bound (`partial`: the walk stopped past a quota) cannot be counted down: it is
   * forgotten, and the next check walks the tree.
   */
  freed(userId: string, bytes: number, inodes: number): void {
    this.bump(userId);
    const known = this.usage.get(userId);
    if (!known) return;
    if (known.partial) {
      this.usage.delete(userId);
      return;
    }
    known.bytes = Math.max(0, known.bytes - bytes);
    known.inodes = Math.max(0, known.inodes - inodes);
  }

  /** Forgets the measured usage of a workspace: the next check walks it. */
  forgetUsage(userId: string): void {
    this.bump(userId);
    this.usage.delete(userId);
  }

  /** A walk started before this moment counts what is gone now: it must not fill the cache. */
  private bump(userId: string): void {
    this.generations.set(userId, (this.generations.get(userId) ?? 0) + 1);
  }

  /**
   * The usage of a workspace walked now (bounded: the walk stops once a quota is passed); cached
   * unless the workspace was changed behind the file tools' back (`remeasureSoon`) meanwhile.
   */
  async measure(userId: string): Promise<Usage> {
    const generation = this.generations.get(userId) ?? 0;
    const u = await measureTree(this.hostDir(userId), this.limits);
    if ((this.generations.get(userId) ?? 0) === generation && u.unmeasured === undefined)
      this.usage.set(userId, { ...u, at: Date.now() });
    return u;
  }

  /**
   * Samples the workspace's usage while something outside the file tools writes it (a command):
   * `listener` hears every sample. One sampler per workspace however many commands run in it; each
   * walk is bounded by the quota, and the next starts `sampleMs` after the last ended, or twice the
   * last walk's time when that is longer (the sampler spends at most a third of its time walking).
   * The answer stops listening.
   */
  watch(userId: string, listener: (u: Usage) => void): () => void {
    let s = this.samplers.get(userId);
    if (!s) {
      const sampler: Sampler = { listeners: new Set() };
      this.samplers.set(userId, sampler);
      const every = this.options.sampleMs ?? DEFAULT_SAMPLE_MS;
      const tick = (): void => {
        const started = Date.now();
        // Every sample is heard: a walk that failed answers `unmeasured`, which is over quota.
        void this.measure(userId)
          .catch((e: unknown): Usage => ({
            bytes: 0,
            inodes: 0,
            partial: true,
            unmeasured: `the walk failed (${String(e)})`,
          }))
          .then((u) => {
            for (const l of sampler.listeners) l(u);
          })
          .finally(() => {
            if (this.samplers.get(userId) !== sampler) return;
            sampler.timer = setTimeout(tick, Math.max(every, 2 * (Date.now() - started)));
          });
      };
      sampler.timer = setTimeout(tick, every);
      s = sampler;
    }
    const sampler = s;
    sampler.listeners.add(listener);
    return () => {
      sampler.listeners.delete(listener);
      if (sampler.listeners.size === 0 && this.samplers.get(userId) === sampler) {
        clearTimeout(sampler.timer);
        this.samplers.delete(userId);
      }
    };
  }

  /** Bumped when a command may have changed a workspace: walks started before do not fill the cache. */
  private readonly generations = new Map<string, number>();
  /** The walk after a command, awaited by the next check rather than walking twice. */
  private readonly pending = new Map<string, Promise<Usage>>();

  /**
   * Forgets the usage of a workspace a command changed, and walks it again in the background; the
   * next check waits for that walk (the cache never answers with figures from before the command).
   */
  remeasureSoon(userId: string): void {
    this.bump(userId);
    this.usage.delete(userId);
    const walk = this.measure(userId);
    this.pending.set(userId, walk);
    void walk
      .catch(() => undefined)
      .finally(() => {
        if (this.pending.get(userId) === walk) this.pending.delete(userId);
      });
  }

  /** Usage of the workspace, from the cache while it is fresh. */
  async used(userId: string, jail: Jail): Promise<Usage> {
    const known = this.usage.get(userId);
    if (known && Date.now() - known.at < this.usageTtlMs) return known;
    const pending = this.pending.get(userId);
    if (pending) {
      const u = await pending.catch(() => null);
      if (u) return u;
    }
    const generation = this.generations.get(userId) ?? 0;
    const u = await measureTree(jail.root, this.limits);
    if ((this.generations.get(userId) ?? 0) === generation && u.unmeasured === undefined)
      this.usage.set(userId, { ...u, at: Date.now() });
    return u;
  }
}

function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}
