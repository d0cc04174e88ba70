import { lstat, opendir } from 'node:fs/promises';
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

/** Entries a directory stream reads ahead per call. */
const DIR_BUFFER = 256;

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
    const handle = await opendir(dir, { bufferSize: DIR_BUFFER }).catch(() => null);
    if (!handle) continue;
    try {
      for await (const entry of handle) {
        inodes++;
        const path = join(dir, entry.name);
        if (entry.isDirectory()) stack.push(path);
        else if (entry.isFile())
          bytes += await lstat(path).then(
            (s) => (s.isFile() ? s.size : 0),
            () => 0,
          );
        if (over()) return { bytes, inodes, partial: true };
      }
    } catch {
      /* the directory vanished or became unreadable mid-walk: what was read counts */
    }
  }
  return { bytes, inodes, partial: false };
}
