import { constants as C, Dir } from 'node:fs';
import { chmod, FileHandle, lstat, open, opendir } from 'node:fs/promises';

/** What a workspace holds: bytes of its regular files and its inodes (every entry below the root). */
export interface Usage {
  /** Apparent size (`st_size`) of the regular files; sparse files count at their full size. */
  bytes: number;
  /** Files, directories, symlinks and other entries below the root (the root itself is not counted). */
  inodes: number;
  /** The walk stopped early because a limit was passed: the figures are lower bounds. */
  partial: boolean;
  /**
   * Set when the walk could not measure the tree (why, in words): an entry listed as a directory was
   * no directory when opened without following links (swapped for a symlink or a file under the
   * walk), a directory stayed unreadable, directories nest deeper than `MAX_DEPTH`, or the root could
   * not be opened. The figures are what was counted before; the quota treats such a sample as over
   * quota (fail closed) until a walk succeeds.
   */
  unmeasured?: string;
}

/** A directory, read-only, never through a symlink in its last component. */
const DIR_NOFOLLOW = C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW;
/**
 * `O_PATH` (Linux; `asm-generic/fcntl.h`, not exported by node): a handle on the inode itself, which
 * needs no read permission on it. With `O_DIRECTORY | O_NOFOLLOW` it opens a real directory only (a
 * symlink answers ENOTDIR).
 */
const O_PATH = 0o10000000;
const DIR_PATH_NOFOLLOW = O_PATH | C.O_DIRECTORY | C.O_NOFOLLOW;

/** Directory levels the walk descends (two descriptors each); deeper nesting is `unmeasured`. */
export const MAX_DEPTH = 256;
/** Entries a directory stream reads ahead per call. */
const DIR_BUFFER = 256;
/** File sizes asked for at once (the thread pool works through them; one round trip per batch). */
const STAT_BATCH = 64;

/** The open directory `fd` itself, resolved by the kernel to its inode (never a path lookup). */
const self = (fd: number): string => `/proc/self/fd/${fd}`;
/** `name` (one component) inside the open directory `fd`: on Linux this behaves like `openat(fd, name)`. */
const at = (fd: number, name: string): string => `/proc/self/fd/${fd}/${name}`;

const code = (e: unknown): string | undefined => (e as NodeJS.ErrnoException).code;

/** Why an entry listed as a directory could not be walked: a word for `unmeasured`. */
class Unmeasured extends Error {}

/**
 * A directory its owner made unreadable (`chmod 000 d`) or unsearchable (`chmod 600 d`) would hide
 * what is below it from a runner that is not root. Every entry of a workspace belongs to the
 * runner's uid (the sandbox maps its uid 1000 onto it), so the walk gives the owner read and search
 * back — only ever through a descriptor of the directory itself (`chmod` of `/proc/self/fd/<fd>`
 * acts on the inode the descriptor holds), opened without following links, and only to a directory
 * the runner's uid owns; never by a path a sandboxed command could swap for a symlink under it.
 */
async function giveBack(handle: FileHandle): Promise<boolean> {
  const st = await handle.stat();
  if (!st.isDirectory() || st.uid !== process.getuid?.()) return false;
  if ((st.mode & 0o700) === 0o700) return false; // not a matter of its mode bits
  await chmod(self(handle.fd), (st.mode & 0o7777) | 0o700);
  return true;
}

/**
 * Opens the directory `name` inside the open directory `parent` without following a link: `null`
 * when it vanished meanwhile (counts 0), `Unmeasured` thrown when it is no directory any more (a
 * symlink or a file swapped in under the walk) or stays unreadable.
 */
async function openChild(parent: number, name: string, shown: string): Promise<FileHandle | null> {
  const path = at(parent, name);
  const fail = (e: unknown): never => {
    const c = code(e);
    if (c === 'ELOOP' || c === 'ENOTDIR')
      throw new Unmeasured(`${shown} was listed as a directory but is no directory now (changed under the walk)`);
    throw new Unmeasured(`${shown} could not be opened (${c ?? String(e)})`);
  };
  try {
    return await open(path, DIR_NOFOLLOW);
  } catch (e) {
    if (code(e) === 'ENOENT') return null;
    if (code(e) !== 'EACCES') return fail(e);
  }
  // Unreadable: an O_PATH handle of the very directory (never a symlink), its mode given back through it.
  const handle = await open(path, DIR_PATH_NOFOLLOW).catch((e: unknown) => (code(e) === 'ENOENT' ? null : fail(e)));
  if (!handle) return null;
  try {
    if (!(await giveBack(handle))) throw new Unmeasured(`${shown} is not readable by the runner`);
    // Reopened through the held handle: the same inode, whatever the name points to by now.
    return await open(self(handle.fd), C.O_RDONLY | C.O_DIRECTORY).catch(fail);
  } finally {
    await handle.close();
  }
}

interface Level {
  handle: FileHandle;
  dir: Dir;
  /** The directory's path below the root, for messages. */
  shown: string;
  /** Set once the owner's search bit was given back (a second EACCES is final). */
  regained?: Promise<boolean>;
}

/**
 * Walks a directory tree once, through descriptors only: every directory is opened relative to its
 * parent's descriptor with `O_NOFOLLOW | O_DIRECTORY`, every size is an `lstat` relative to the
 * directory's descriptor, so no symlink — even one swapped in while the walk runs
 * (`renameat2(RENAME_EXCHANGE)`) — leads it outside the tree, and the only change it ever makes
 * (`giveBack`) goes through a descriptor of a directory the runner owns. A symlink to a big file
 * costs one inode; entries that vanish meanwhile count 0. Bounded: the walk stops as soon as
 * `stopAbove` is passed (more inodes or more bytes than it says), so a tree of a million empty files
 * costs no more than the quota's worth of entries; directories are streamed (`opendir`), never listed
 * whole; at most `MAX_DEPTH` levels (two descriptors each) are open at once.
 */
export async function diskUsage(root: string, stopAbove?: { bytes: number; inodes: number }): Promise<Usage> {
  let bytes = 0;
  let inodes = 0;
  const over = (): boolean => stopAbove !== undefined && (inodes > stopAbove.inodes || bytes > stopAbove.bytes);
  const result = (extra: Partial<Usage> = {}): Usage => ({ bytes, inodes, partial: over(), ...extra });
  const levels: Level[] = [];
  const enter = async (handle: FileHandle, shown: string): Promise<void> => {
    try {
      levels.push({ handle, dir: await opendir(self(handle.fd), { bufferSize: DIR_BUFFER }), shown });
    } catch (e) {
      await handle.close();
      throw new Unmeasured(`${shown || '/'} could not be listed (${code(e) ?? String(e)})`);
    }
  };
  const leave = async (): Promise<void> => {
    const level = levels.pop() as Level;
    await level.dir.close().catch(() => undefined);
    await level.handle.close().catch(() => undefined);
  };
  try {
    let rootHandle: FileHandle;
    try {
      rootHandle = await open(root, DIR_NOFOLLOW);
    } catch (e) {
      if (code(e) === 'ENOENT') return { bytes: 0, inodes: 0, partial: false };
      return result({ unmeasured: `the workspace could not be opened (${code(e) ?? String(e)})` });
    }
    await enter(rootHandle, '');
    while (levels.length > 0) {
      const level = levels[levels.length - 1];
      const sizeOf = async (name: string): Promise<number> => {
        const size = () => lstat(at(level.handle.fd, name)).then((st) => (st.isFile() ? st.size : 0));
        try {
          return await size();
        } catch (e) {
          if (code(e) === 'ENOENT') return 0;
          if (code(e) !== 'EACCES') throw new Unmeasured(`${level.shown}/${name} could not be read (${code(e)})`);
        }
        // Readable but not searchable (`chmod 600 d`): sizes need search permission.
        level.regained ??= giveBack(level.handle).catch(() => false);
        if (!(await level.regained)) throw new Unmeasured(`${level.shown || '/'} is not searchable by the runner`);
        return size().catch((e: unknown) => {
          if (code(e) === 'ENOENT') return 0;
          throw new Unmeasured(`${level.shown}/${name} could not be read (${code(e)})`);
        });
      };
      let batch: string[] = [];
      const flush = async (): Promise<void> => {
        const sizes = await Promise.all(batch.map(sizeOf));
        batch = [];
        for (const n of sizes) bytes += n;
      };
      let child: string | null = null;
      // bounded by the directory's entries, and by the walk's inode and byte limits (`over()`)
      for (;;) {
        const entry = await level.dir.read().catch((e: unknown) => {
          throw new Unmeasured(`${level.shown || '/'} could not be listed (${code(e) ?? String(e)})`);
        });
        if (entry === null) break;
        inodes++;
        if (entry.isDirectory()) {
          child = entry.name;
          break;
        }
        if (entry.isFile()) batch.push(entry.name);
        if (batch.length >= STAT_BATCH) await flush();
        if (over()) return result();
      }
      await flush();
      if (over()) return result();
      if (child === null) {
        await leave();
        continue;
      }
      // Depth first, so that only the open chain of ancestors holds descriptors.
      const shown = `${level.shown}/${child}`;
      if (levels.length >= MAX_DEPTH)
        throw new Unmeasured(`directories nest deeper than ${MAX_DEPTH} levels at ${shown}`);
      const handle = await openChild(level.handle.fd, child, shown);
      if (handle) await enter(handle, shown);
    }
    return result();
  } catch (e) {
    if (e instanceof Unmeasured) return result({ unmeasured: e.message });
    return result({ unmeasured: `the walk failed (${code(e) ?? String(e)})` });
  } finally {
    while (levels.length > 0) await leave();
  }
}
