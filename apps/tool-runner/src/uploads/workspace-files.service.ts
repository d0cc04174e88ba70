import { Inject, Injectable } from '@nestjs/common';
import { FileHandle, mkdir, open, readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { FileReadReply, FileReadRequest, FileUploadReply, FileUploadRequest, WORKSPACE_ROOT } from '@skald/contracts';
import { ToolError } from '../tool-error';
import { ioError } from '../workspace/jail';
import { KeyedMutex } from '../workspace/keyed-mutex';
import { resolveWorkspacePath } from '../workspace/workspace-path';
import { formatBytes, WORKSPACE_OPTIONS, WorkspaceOptions, WorkspacesService } from '../workspace/workspaces.service';
import { candidateNames, sanitizeUploadName } from './upload-name';

type UploadChunk = z.output<typeof FileUploadRequest>;
type ReadChunk = z.output<typeof FileReadRequest>;

/** Where uploads land, below the workspace root. */
export const UPLOADS_DIR = 'uploads';
/** Names tried when an upload's name is taken (`a (1).txt` …); past that the upload id names it. */
const NAME_TRIES = 100;
/** A staged upload untouched this long is abandoned (the client went away) and swept. */
export const STAGING_TTL_MS = 60 * 60 * 1000;
/** Staged uploads looked at per sweep. */
const SWEEP_MAX = 1000;
const COPY_BUFFER = 1024 * 1024;

/**
 * Uploads into and downloads from a user's workspace, for the gateway (`files.upload`,
 * `files.read`). Chunks of an upload are staged in `<root>/.staging/` (outside every workspace, on
 * the same volume the replicas share) and the finished file is written through the jail, under the
 * workspace's write lock and within its quota; staged bytes count against the quota while they wait.
 */
@Injectable()
export class WorkspaceFilesService {
  private readonly uploads = new KeyedMutex();
  private lastSweep = 0;

  constructor(
    private readonly workspaces: WorkspacesService,
    @Inject(WORKSPACE_OPTIONS) private readonly options: WorkspaceOptions,
  ) {}

  async upload(req: UploadChunk): Promise<z.output<typeof FileUploadReply>> {
    const userId = req.actor.userId;
    const staged = await this.stagingPath(userId, req.upload_id);
    return this.uploads.run(staged, async () => {
      if (req.offset === 0) await this.sweep();
      const data = Buffer.from(req.data, 'base64');
      const have = await stat(staged).then(
        (s) => s.size,
        () => 0,
      );
      if (req.offset > have)
        throw new ToolError('invalid_argument', `upload chunk at byte ${req.offset}, but ${have} bytes were received`);
      const end = req.offset + data.length;
      if (end > have) {
        if (req.offset < have)
          throw new ToolError('invalid_argument', `upload chunk at byte ${req.offset} overlaps what was received`);
        await this.ensureRoom(userId, end, req.name);
        const f = await open(staged, 'a', 0o600);
        try {
          await f.write(data);
        } finally {
          await f.close();
        }
      }
      if (!req.last) return { received: end };
      return { received: end, attachment: await this.store(req, staged, end) };
    });
  }

  async read(req: ReadChunk): Promise<z.output<typeof FileReadReply>> {
    const p = resolveWorkspacePath(req.path, WORKSPACE_ROOT);
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
        const p = resolveWorkspacePath(`${WORKSPACE_ROOT}/${UPLOADS_DIR}/${candidate}`);
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

  /** Growing a staged upload to `total` bytes must leave the workspace within its quota. */
  private async ensureRoom(userId: string, total: number, name: string): Promise<void> {
    const jail = await this.workspaces.jail(userId);
    const used = await this.workspaces.used(userId, jail);
    const quota = this.workspaces.quota;
    if (used.bytes + total > quota)
      throw new ToolError(
        'quota_exceeded',
        `workspace quota exceeded: the upload ${sanitizeUploadName(name)} needs ${formatBytes(total)}, but the workspace ` +
          `uses ${formatBytes(used.bytes)} of its ${formatBytes(quota)} quota`,
      );
  }

  private async stagingPath(userId: string, uploadId: string): Promise<string> {
    this.workspaces.hostDir(userId); // validates the user id
    const dir = join(this.options.root, '.staging');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return join(dir, `${userId}.${uploadId}`);
  }

  /** Removes staged uploads abandoned for `STAGING_TTL_MS` (at most once a minute, bounded). */
  private async sweep(): Promise<void> {
    if (Date.now() - this.lastSweep < 60_000) return;
    this.lastSweep = Date.now();
    const dir = join(this.options.root, '.staging');
    const names = (await readdir(dir).catch(() => [] as string[])).slice(0, SWEEP_MAX);
    for (const n of names) {
      const p = join(dir, n);
      const s = await stat(p).catch(() => null);
      if (s && Date.now() - s.mtimeMs > STAGING_TTL_MS) await unlink(p).catch(() => undefined);
    }
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
