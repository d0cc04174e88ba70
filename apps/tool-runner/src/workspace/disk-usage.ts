import { chmod, lstat, opendir } from 'node:fs/promises';
import { join } from 'node:path';

/** What a workspace holds: bytes of its regular files and its inodes (every entry below the root). */
export interface Usage {
  /** Apparent size (`st_size`) of the regular files; sparse files count at their full size. */
  bytes: number;
  /** Files, directories, symlinks and other entries below the root (the root itself is not counted). */
  inodes: number;
  /** The walk stopped early because a limit was passed: the figures are lower bounds. */
  partial: boolean;
}

/**
 * A directory its owner made unreadable (`chmod 000 d`) would hide what is below it from a runner
 * that is not root. Every entry of a workspace belongs to the runner's uid (the sandbox maps its uid
 * 1000 onto it), so the walk gives the owner read and search back: only to a real directory (never
 * through a symlink swapped in), and only the owner's bits.
 */
async function reopen(dir: string): Promise<boolean> {
  const st = await lstat(dir).catch(() => null);
  if (!st?.isDirectory() || (st.mode & 0o500) === 0o500) return false;
  return chmod(dir, (st.mode & 0o7777) | 0o700).then(
    () => true,
    () => false,
  );
}

const denied = (e: unknown): boolean => (e as NodeJS.ErrnoException).code === 'EACCES';

/** Entries a directory stream reads ahead per call. */
const DIR_BUFFER = 256;
/** File sizes asked for at once (the thread pool works through them; one round trip per batch). */
const STAT_BATCH = 64;

/**
 * Walks a directory tree once. Symlinks are never followed (a link to a big file costs one inode),
 * entries that vanish meanwhile count 0. Bounded: the walk stops as soon as `stopAbove` is passed
 * (more inodes or more bytes than it says), so a tree of a million empty files costs no more than the
 * quota's worth of entries; directories are streamed (`opendir`), never listed whole.
 */
export async function diskUsage(root: string, stopAbove?: { bytes: number; inodes: number }): Promise<Usage> {
  let bytes = 0;
  let inodes = 0;
  const stack = [root];
  const over = (): boolean => stopAbove !== undefined && (inodes > stopAbove.inodes || bytes > stopAbove.bytes);
  while (stack.length > 0) {
    const dir = stack.pop() as string;
    const open = () => opendir(dir, { bufferSize: DIR_BUFFER });
    const handle = await open().catch(async (e: unknown) => (denied(e) && (await reopen(dir)) ? open() : null));
    if (!handle) continue;
    let reopened: Promise<boolean> | null = null;
    const sizeOf = (path: string): Promise<number> => {
      const size = () => lstat(path).then((st) => (st.isFile() ? st.size : 0));
      return size().catch(async (e: unknown) => {
        // Readable but not searchable (`chmod 600 d`): sizes need search permission.
        if (!denied(e)) return 0;
        reopened ??= reopen(dir);
        return (await reopened) ? size().catch(() => 0) : 0;
      });
    };
    let batch: string[] = [];
    const flush = async (): Promise<void> => {
      const sizes = await Promise.all(batch.map(sizeOf));
      batch = [];
      for (const n of sizes) bytes += n;
    };
    try {
      for await (const entry of handle) {
        inodes++;
        const path = join(dir, entry.name);
        if (entry.isDirectory()) stack.push(path);
        else if (entry.isFile()) batch.push(path);
        if (batch.length >= STAT_BATCH) await flush();
        if (over()) return { bytes, inodes, partial: true };
      }
    } catch {
      /* the directory vanished or became unreadable mid-walk: what was read counts */
    }
    await flush();
    if (over()) return { bytes, inodes, partial: true };
  }
  return { bytes, inodes, partial: false };
}
