import { Inject, Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { access, constants as FS, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readiness } from '@skald/service-kit';
import { ToolError } from '../tool-error';
import { diskUsage } from './disk-usage';
import { Jail } from './jail';
import { KeyedMutex } from './keyed-mutex';
import { WorkspaceLock } from './workspace-lock';

export const WORKSPACE_OPTIONS = Symbol('WORKSPACE_OPTIONS');
export interface WorkspaceOptions {
  /** Directory holding one workspace per user. */
  root: string;
  /** Bytes per workspace. */
  quota: number;
  /** How long a measured usage is trusted before the tree is walked again (commands change it too). */
  usageTtlMs?: number;
}

const USER_DIR = /^[0-9a-fA-F-]{1,64}$/;

/**
 * Per-user workspaces `<root>/<userId>/` (mode 0700, created on first use), the jail that opens
 * files inside them, the write lock of each workspace and its disk quota.
 */
@Injectable()
export class WorkspacesService implements OnModuleInit {
  private readonly usage = new Map<string, { bytes: number; at: number }>();
  private readonly writes = new KeyedMutex();
  private readonly usageTtlMs: number;

  constructor(
    @Inject(WORKSPACE_OPTIONS) private readonly options: WorkspaceOptions,
    @Optional() private readonly readiness?: Readiness,
    @Optional() private readonly replicas?: WorkspaceLock,
  ) {
    this.usageTtlMs = options.usageTtlMs ?? 30_000;
  }

  get quota(): number {
    return this.options.quota;
  }

  async onModuleInit(): Promise<void> {
    await mkdir(this.options.root, { recursive: true, mode: 0o700 });
    this.readiness?.register('workspaces', async () => {
      await access(this.options.root, FS.W_OK).catch(() => {
        throw new Error(`workspace root is not writable: ${this.options.root}`);
      });
    });
  }

  /** The user's jail; the workspace directory is created on first use. */
  async jail(userId: string): Promise<Jail> {
    if (!USER_DIR.test(userId)) throw new ToolError('invalid_argument', 'invalid user id');
    const dir = join(this.options.root, userId);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return Jail.at(dir);
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
   * Shrinking is always allowed. Call inside `exclusive`, then `commit` once written.
   */
  async ensureRoom(userId: string, jail: Jail, delta: number, path: string): Promise<void> {
    if (delta <= 0) return;
    const used = await this.used(userId, jail);
    if (used + delta > this.options.quota) {
      throw new ToolError(
        'quota_exceeded',
        `workspace quota exceeded: writing ${path} needs ${formatBytes(delta)} more, but the workspace uses ` +
          `${formatBytes(used)} of its ${formatBytes(this.options.quota)} quota. Delete files to make room.`,
      );
    }
  }

  /** Records a completed write of `delta` bytes. */
  commit(userId: string, delta: number): void {
    const known = this.usage.get(userId);
    if (known) known.bytes = Math.max(0, known.bytes + delta);
  }

  /** Bytes the workspace may still grow by (0 when full or over quota). */
  async room(userId: string, jail: Jail): Promise<number> {
    return Math.max(0, this.options.quota - (await this.used(userId, jail)));
  }

  private readonly measuring = new Set<string>();

  /** Walks the workspace again in the background (one walk per user at a time). */
  remeasureSoon(userId: string): void {
    if (this.measuring.has(userId)) return;
    this.measuring.add(userId);
    void this.remeasure(userId)
      .catch(() => this.usage.delete(userId))
      .finally(() => this.measuring.delete(userId));
  }

  /** Walks the workspace again (after a command, which changes it behind the file tools' back). */
  async remeasure(userId: string): Promise<{ used: number; quota: number }> {
    const bytes = await diskUsage(this.hostDir(userId));
    this.usage.set(userId, { bytes, at: Date.now() });
    return { used: bytes, quota: this.options.quota };
  }

  private async used(userId: string, jail: Jail): Promise<number> {
    const known = this.usage.get(userId);
    if (known && Date.now() - known.at < this.usageTtlMs) return known.bytes;
    const bytes = await diskUsage(jail.root);
    this.usage.set(userId, { bytes, at: Date.now() });
    return bytes;
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
