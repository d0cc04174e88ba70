import { Inject, Injectable, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { FileHandle, mkdir, open, readdir, rmdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import {
  FileReadReply,
  FileReadRequest,
  FileUploadReply,
  FileUploadRequest,
  USER_CAPS,
  userCapReached,
  WORKSPACE_ROOT,
} from '@skald/contracts';
import { RemoteError } from '@skald/messaging/bus-errors';
import { DocumentRenditions } from '../documents/document-renditions.service';
import { ToolError } from '../tool-error';
import { ioError } from '../workspace/jail';
import { KeyedMutex } from '../workspace/keyed-mutex';
import { nonToolPath, resolveWorkspacePath } from '../workspace/workspace-path';
import { formatBytes, WORKSPACE_OPTIONS, WorkspaceOptions, WorkspacesService } from '../workspace/workspaces.service';
import { candidateNames, sanitizeUploadName } from './upload-name';

type UploadChunk = z.output<typeof FileUploadRequest>;
type ReadChunk = z.output<typeof FileReadRequest>;

/** Where uploads land, below the workspace root. */
export const UPLOADS_DIR = 'uploads';
/** Names tried when an upload's name is taken (`a (1).txt` …); past that the upload id names it. */
const NAME_TRIES = 100;
/** A staged upload untouched this long is abandoned (the client went away) and swept (default). */
export const DEFAULT_STAGING_TTL_MS = 10 * 60 * 1000;
/** How often the sweep of abandoned staged uploads runs (default). */
export const DEFAULT_STAGING_SWEEP_MS = 60 * 1000;
/** Entries (user directories, then staged uploads) looked at per sweep: the sweep is bounded. */
export const SWEEP_MAX = 10_000;
const COPY_BUFFER = 1024 * 1024;

/** Bounds of staged uploads (see `USER_CAPS.uploads`, `USER_CAPS.staged_bytes`). */
export interface UploadOptions {
  /** Uploads in progress per user. */
  maxUploads: number;
  /** Bytes staged per user. */
  maxStagedBytes: number;
  /** A staged upload not written for this long is removed by the sweep. */
  stagingTtlMs: number;
  /** The sweep's period (0: no timer; the sweep still runs when an upload starts). */
  sweepMs: number;
}
export const UPLOAD_OPTIONS = Symbol('UPLOAD_OPTIONS');
export const DEFAULT_UPLOAD_OPTIONS: UploadOptions = {
  maxUploads: USER_CAPS.uploads.default,
  maxStagedBytes: USER_CAPS.staged_bytes.default,
  stagingTtlMs: DEFAULT_STAGING_TTL_MS,
  sweepMs: DEFAULT_STAGING_SWEEP_MS,
};

/** What a user has staged: the size of each upload in progress. */
interface Staged {
  sizes: Map<string, number>;
  bytes: number;
}

/**
 * Uploads into and downloads from a user's workspace, for the gateway (`files.upload`,
 * `files.read`). Chunks of an upload are staged in `<root>/.staging/<userId>/<uploadId>` (outside
 * every workspace, on the same volume the replicas share) and the finished file is written through
 * the jail, under the workspace's write lock and within its quota.
 *
 * Staged bytes are the user's: every chunk is appended under the workspace's write lock (this
 * process's mutex and the replicas' advisory lock), after checking that the workspace's usage plus
 * everything the user has staged plus the chunk stays within the quota, that the user's staged
 * bytes stay within `maxStagedBytes` and that a new upload does not pass `maxUploads`. Parallel
 * chunks, of one upload or of many, are checked one at a time against what is on disk, so they
 * cannot pass a bound together. A staged upload not written for `stagingTtlMs` is removed by a
 * bounded sweep every `sweepMs`.
 */
@Injectable()
export class WorkspaceFilesService implements OnModuleInit, OnModuleDestroy {
  /** One request of an upload at a time (a retried chunk, a repeated last chunk). */
  private readonly uploads = new KeyedMutex();
  private lastSweep = 0;
  private sweepTimer?: NodeJS.Timeout;
  private readonly opts: UploadOptions;

  constructor(
    private readonly workspaces: WorkspacesService,
    @Inject(WORKSPACE_OPTIONS) private readonly options: WorkspaceOptions,
    @Optional() @Inject(UPLOAD_OPTIONS) opts?: Partial<UploadOptions>,
    @Optional() private readonly documents?: DocumentRenditions,
  ) {
    this.opts = { ...DEFAULT_UPLOAD_OPTIONS, ...opts };
  }

  onModuleInit(): void {
    if (this.opts.sweepMs <= 0) return;
    const tick = (): void => {
      this.sweepTimer = setTimeout(() => void this.sweep(true).finally(tick), this.opts.sweepMs);
      this.sweepTimer.unref();
    };
    tick();
  }

  onModuleDestroy(): void {
    clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  async upload(req: UploadChunk): Promise<z.output<typeof FileUploadReply>> {
    const userId = req.actor.userId;
    const staged = await this.stagingPath(userId, req.upload_id);
    return this.uploads.run(staged, () => this.chunk(req, staged));
  }

  private async chunk(req: UploadChunk, staged: string): Promise<z.output<typeof FileUploadReply>> {
    const userId = req.actor.userId;
    if (req.offset === 0) await this.sweep(false);
    const data = Buffer.from(req.data, 'base64');
    // One writer of the user's staged bytes at a time, across replicas: the bounds are checked
    // against the disk and the chunk appended before the next chunk is looked at.
    const end = await this.workspaces.exclusive(userId, async () => {
      const mine = await this.staged(userId);
      const have = mine.sizes.get(req.upload_id);
      if (req.offset > (have ?? 0))
        throw new ToolError(
          'invalid_argument',
          `upload chunk at byte ${req.offset}, but ${have ?? 0} bytes were received`,
        );
      const end = req.offset + data.length;
      if (end <= (have ?? 0) && have !== undefined) return end;
      if (have !== undefined && req.offset < have)
        throw new ToolError('invalid_argument', `upload chunk at byte ${req.offset} overlaps what was received`);
      if (have === undefined && mine.sizes.size >= this.opts.maxUploads)
        throw new RemoteError(userCapReached('uploads', this.opts.maxUploads, mine.sizes.size));
      if (mine.bytes + data.length > this.opts.maxStagedBytes)
        throw new RemoteError(userCapReached('staged_bytes', this.opts.maxStagedBytes, mine.bytes));
      await this.ensureRoom(userId, mine.bytes + data.length, end, req.name);
      const f = await open(staged, 'a', 0o600);
      try {
        await f.write(data);
      } finally {
        await f.close();
      }
      return end;
    });
    if (!req.last) return { received: end };
    const attachment = await this.store(req, staged, end);
    // A document's text rendition is made in the background: the upload is answered now.
    this.documents?.prepare(userId, attachment.path);
    return { received: end, attachment };
  }

  async read(req: ReadChunk): Promise<z.output<typeof FileReadReply>> {
    const p = resolveWorkspacePath(nonToolPath(req.path), WORKSPACE_ROOT);
    const jail = await this.workspaces.jail(req.actor.userId);
    const { handle, size } = await jail.openRead(p);
    try {
      const want = Math.max(0, Math.min(req.length, size - req.offset));
      const buf = Buffer.alloc(want);
      let got = 0;
      while (got < want) {
        const { bytesRead } = await handle.read(buf, got, want - got, req.offset + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return { path: p.virtual, size, data: buf.subarray(0, got).toString('base64') };
    } catch (e) {
      throw ioError(e, p);
    } finally {
      await handle.close();
    }
  }

  /** Moves a complete staged upload into `uploads/` under a free sanitised name. */
  private async store(req: UploadChunk, staged: string, size: number) {
    const userId = req.actor.userId;
    const name = sanitizeUploadName(req.name);
    return this.workspaces.exclusive(userId, async () => {
      const jail = await this.workspaces.jail(userId);
      const used = await this.workspaces.used(userId, jail);
      await this.workspaces.ensureRoom(userId, jail, size, `${WORKSPACE_ROOT}/${UPLOADS_DIR}/${name}`);
      const left = Math.max(0, this.workspaces.limits.inodes - used.inodes);
      for (const candidate of [...candidateNames(name, NAME_TRIES), `${req.upload_id}-${name}`]) {
        const p = resolveWorkspacePath(nonToolPath(`${WORKSPACE_ROOT}/${UPLOADS_DIR}/${candidate}`));
        const target = await jail.openWrite(p, {
          create: true,
          budget: { left, full: () => this.workspaces.inodesFull(p.virtual, used) },
        });
        let written = false;
        try {
          if (!target.created) continue;
          await copyInto(staged, target.handle);
          written = true;
          this.workspaces.commit(userId, size, target.newInodes);
        } catch (e) {
          throw ioError(e, p);
        } finally {
          if (!written) await target.discard();
          await target.close();
        }
        await unlink(staged).catch(() => undefined);
        return { path: p.virtual, name: candidate, mimetype: req.mimetype, filesize: size };
      }
      throw new ToolError('invalid_argument', `uploads/${name} and its variants are all taken`);
    });
  }

  /**
   * Staging `staged` bytes in all (this user's uploads in progress, the chunk included) must leave
   * the workspace within its quota. Call inside `exclusive`.
   */
  private async ensureRoom(userId: string, staged: number, total: number, name: string): Promise<void> {
    const jail = await this.workspaces.jail(userId);
    const used = await this.workspaces.used(userId, jail);
    const quota = this.workspaces.quota;
    if (used.bytes + staged > quota)
      throw new ToolError(
        'quota_exceeded',
        `workspace quota exceeded: the upload ${sanitizeUploadName(name)} needs ${formatBytes(total)}, and uploads ` +
          `in progress hold ${formatBytes(staged)} in all, but the workspace uses ${formatBytes(used.bytes)} of its ` +
          `${formatBytes(quota)} quota`,
      );
  }

  /** The user's staged uploads and their sizes, read from the disk (bounded by `maxUploads`, plus a margin). */
  private async staged(userId: string): Promise<Staged> {
    const dir = this.userStagingDir(userId);
    const names = (await readdir(dir).catch(() => [] as string[])).slice(0, this.opts.maxUploads + 16);
    const sizes = new Map<string, number>();
    let bytes = 0;
    for (const n of names) {
      const s = await stat(join(dir, n)).catch(() => null);
      if (!s?.isFile()) continue;
      sizes.set(n, s.size);
      bytes += s.size;
    }
    return { sizes, bytes };
  }

  private stagingRoot(): string {
    return join(this.options.root, '.staging');
  }

  private userStagingDir(userId: string): string {
    this.workspaces.hostDir(userId); // validates the user id
    return join(this.stagingRoot(), userId);
  }

  private async stagingPath(userId: string, uploadId: string): Promise<string> {
    const dir = this.userStagingDir(userId);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return join(dir, uploadId);
  }

  /**
   * Removes staged uploads not written for `stagingTtlMs` (and empty user directories, and flat
   * files of the old layout). Bounded: at most `SWEEP_MAX` entries a sweep; run by the timer, and
   * when an upload starts if the last sweep is older than the period.
   */
  async sweep(force: boolean): Promise<number> {
    const period = this.opts.sweepMs > 0 ? this.opts.sweepMs : DEFAULT_STAGING_SWEEP_MS;
    if (!force && Date.now() - this.lastSweep < period) return 0;
    this.lastSweep = Date.now();
    const root = this.stagingRoot();
    let budget = SWEEP_MAX;
    let removed = 0;
    const stale = (mtimeMs: number) => Date.now() - mtimeMs > this.opts.stagingTtlMs;
    for (const top of (await readdir(root).catch(() => [] as string[])).slice(0, SWEEP_MAX)) {
      if (budget-- <= 0) break;
      const p = join(root, top);
      const s = await stat(p).catch(() => null);
      if (!s) continue;
      if (s.isFile()) {
        if (
          stale(s.mtimeMs) &&
          (await unlink(p).then(
            () => true,
            () => false,
          ))
        )
          removed++;
        continue;
      }
      if (!s.isDirectory()) continue;
      const names = (await readdir(p).catch(() => [] as string[])).slice(0, Math.max(0, budget));
      budget -= names.length;
      for (const n of names) {
        const f = join(p, n);
        const fs = await stat(f).catch(() => null);
        if (
          fs?.isFile() &&
          stale(fs.mtimeMs) &&
          (await unlink(f).then(
            () => true,
            () => false,
          ))
        )
          removed++;
      }
      // Empty now: gone (a racing upload's mkdir recreates it; rmdir refuses a non-empty one).
      if (stale(s.mtimeMs)) await rmdir(p).catch(() => undefined);
    }
    return removed;
  }
}

async function copyInto(from: string, to: FileHandle): Promise<void> {
  const src = await open(from, 'r');
  try {
    const buf = Buffer.allocUnsafe(COPY_BUFFER);
    let pos = 0;
    for (;;) {
      const { bytesRead } = await src.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) break;
      let done = 0;
      while (done < bytesRead) {
        const { bytesWritten } = await to.write(buf, done, bytesRead - done, pos + done);
        done += bytesWritten;
      }
      pos += bytesRead;
    }
    await to.truncate(pos);
  } finally {
    await src.close();
  }
}
