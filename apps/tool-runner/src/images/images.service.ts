import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { ToolImageReply, ToolImageRequest, WORKSPACE_ROOT } from '@skald/contracts';
import { readUpTo } from '../files/file-io';
import { ToolError } from '../tool-error';
import { nonToolPath, resolveWorkspacePath } from '../workspace/workspace-path';
import { formatBytes, WorkspacesService } from '../workspace/workspaces.service';
import { fitImage, ImageRefused } from './image-fit';

type Request = z.output<typeof ToolImageRequest>;
type Reply = z.output<typeof ToolImageReply>;

/** Bytes of an image file read to make it ready for a model (a larger one is refused unread). */
export const MAX_IMAGE_FILE_BYTES = 32 * 1024 * 1024;
/** Images decoded at once by this process (each may take up to `MAX_INPUT_PIXELS` × 4 bytes). */
export const MAX_CONCURRENT_FITS = 2;
/** Fitted images kept (by user, path, size, modification time and limits), and their bytes. */
export const IMAGE_CACHE_ENTRIES = 128;
export const IMAGE_CACHE_BYTES = 48 * 1024 * 1024;

/**
 * `tools.image`: a workspace image of the user fitted to a vision client's limits (see `fitImage`).
 * Read through the workspace jail like every file tool; a history projected again and again sends
 * the same images each round, so a fitted image is kept in a bounded LRU, keyed by the file's size
 * and modification time (a file written since is fitted anew).
 */
@Injectable()
export class ImagesService {
  private readonly cache = new Map<string, { reply: Reply; bytes: number }>();
  private cachedBytes = 0;
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly workspaces: WorkspacesService) {}

  async image(req: Request): Promise<Reply> {
    try {
      return await this.fit(req);
    } catch (e) {
      if (e instanceof ImageRefused || e instanceof ToolError) return { ok: false, reason: e.message };
      throw e;
    }
  }

  private async fit(req: Request): Promise<Reply> {
    const p = resolveWorkspacePath(nonToolPath(req.path), WORKSPACE_ROOT);
    const jail = await this.workspaces.jail(req.actor.userId);
    const { handle, size } = await jail.openRead(p);
    try {
      if (size > MAX_IMAGE_FILE_BYTES) {
        throw new ImageRefused(
          `it is ${formatBytes(size)}, more than the ${formatBytes(MAX_IMAGE_FILE_BYTES)} an image file may be`,
        );
      }
      const { mtimeMs } = await handle.stat();
      const key = [req.actor.userId, p.virtual, size, mtimeMs, req.max_side, req.max_bytes].join('\0');
      const hit = this.cache.get(key);
      if (hit) {
        this.cache.delete(key);
        this.cache.set(key, hit);
        return hit.reply;
      }
      const bytes = await readUpTo(handle, MAX_IMAGE_FILE_BYTES, size);
      const fitted = await this.bounded(() => fitImage(bytes, { maxSide: req.max_side, maxBytes: req.max_bytes }));
      const reply: Reply = {
        ok: true,
        path: p.virtual,
        mime: fitted.mime,
        width: fitted.width,
        height: fitted.height,
        data: fitted.data.toString('base64'),
      };
      this.remember(key, reply, fitted.data.length);
      return reply;
    } finally {
      await handle.close();
    }
  }

  private remember(key: string, reply: Reply, bytes: number): void {
    this.cache.set(key, { reply, bytes });
    this.cachedBytes += bytes;
    for (const [oldest, entry] of this.cache) {
      if (this.cache.size <= IMAGE_CACHE_ENTRIES && this.cachedBytes <= IMAGE_CACHE_BYTES) break;
      this.cache.delete(oldest);
      this.cachedBytes -= entry.bytes;
    }
  }

  /** At most `MAX_CONCURRENT_FITS` decodes at once; the others wait their turn. */
  private async bounded<T>(work: () => Promise<T>): Promise<T> {
    // A finished decode hands its slot to the next waiter directly, so no newcomer can take it between.
    if (this.running >= MAX_CONCURRENT_FITS) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
