// Size: one class, the only way the file tools touch a workspace: opening, resolving and removing
// all go through its private component-by-component walk and its checks of what a descriptor
// reached; split, those checks would have to be public, and a second way in would be possible.
import { closeSync, constants as C, Dirent, fstatSync, openSync, readSync } from 'node:fs';
import {
  FileHandle,
  lstat,
  mkdir,
  open,
  opendir,
  readdir,
  readlink,
  realpath,
  rmdir,
  stat,
  unlink,
} from 'node:fs/promises';
import { posix } from 'node:path';
import { DanglingSymlink, ToolError } from '../tool-error';
import { WorkspacePath } from './workspace-path';

const DIR_NOFOLLOW = C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW;
const DIR_FOLLOW = C.O_RDONLY | C.O_DIRECTORY;
const READ_NOFOLLOW = C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK;
const READ_FOLLOW = C.O_RDONLY | C.O_NONBLOCK;
const RDWR_NOFOLLOW = C.O_RDWR | C.O_NOFOLLOW | C.O_NONBLOCK;
const RDWR_FOLLOW = C.O_RDWR | C.O_NONBLOCK;
const CREATE_EXCL = C.O_RDWR | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW | C.O_NONBLOCK;

export const FILE_MODE = 0o644;

/** A file opened for writing, with its directory kept open until `close()`. */
export interface WriteTarget {
  handle: FileHandle;
  size: number;
  created: boolean;
  /** Entries this call created: the file and any parent directories. */
  newInodes: number;
  discard(): Promise<void>;
  close(): Promise<void>;
}
export const DIR_MODE = 0o755;

/** How many entries a write may create, and the error once it may create no more. */
export interface InodeBudget {
  left: number;
  full(): Error;
}

/** What `Jail.remove` took away: bytes of regular files, entries, and whether it got through all of them. */
export interface Removed {
  bytes: number;
  inodes: number;
  /** False when it stopped at `maxEntries` or on `signal`: the entry itself and some below it remain. */
  complete: boolean;
}

/** Directory levels a recursive removal descends (one descriptor each); deeper nesting is refused. */
export const REMOVE_MAX_DEPTH = 256;

/** Which directory a stat describes (the same path may later name another one). */
export function directoryIdentity(st: { dev: number; ino: number }): string {
  return `${st.dev}:${st.ino}`;
}

/** A path relative to an open directory: on Linux `/proc/self/fd/<fd>/<name>` behaves like `openat(fd, name)`. */
function at(dir: FileHandle, name: string): string {
  return atFd(dir.fd, name);
}

function atFd(fd: number, name: string): string {
  return `/proc/self/fd/${fd}/${name}`;
}

/**
 * One user's workspace on disk, and the only way the file tools touch it.
 *
 * Node 20 has no `openat`/`openat2`, so the jail walks a path one component at a time from an open
 * descriptor of the root (`/proc/self/fd/<fd>/<name>` is resolved by the kernel against that very
 * directory, whatever happens to the path above it). A component that is a symlink is followed only
 * if its target lies inside the root, and every descriptor reached through a symlink is checked
 * again after opening (`realpath` of `/proc/self/fd/<fd>`), so a link swapped between the check and
 * the open is caught before a byte is read or written. Files are opened without `O_TRUNC` and with
 * `O_NONBLOCK`, so a race can never truncate or hang on something outside the root.
 */
export class Jail {
  private constructor(
    readonly root: string,
    /** The root directory's `dev:ino` when it was resolved: which directory this jail is of. */
    readonly identity: string,
    /** Who new entries belong to: the workspace root's owner, when it is not this process (a tenant uid). */
    private readonly owner: { uid: number; gid: number } | null = null,
  ) {}

  /**
   * `root` must exist; it is resolved once to its real path. A root runner whose workspace belongs
   * to a tenant uid (sandboxes run as it) gives every file and directory it creates to that owner.
   */
  static async at(root: string): Promise<Jail> {
    const real = await realpath(root);
    const st = await stat(real);
    if (!st.isDirectory()) throw Object.assign(new Error(`ENOTDIR: not a directory, '${root}'`), { code: 'ENOTDIR' });
    const me = process.getuid?.();
    const owner = me === 0 && st.uid !== 0 ? { uid: st.uid, gid: st.gid } : null;
    return new Jail(real, directoryIdentity(st), owner);
  }

  /** Gives a created entry to the workspace's owner (through its open descriptor: no path race). */
  private async own(handle: FileHandle): Promise<void> {
    if (this.owner) await handle.chown(this.owner.uid, this.owner.gid);
  }

  contains(real: string): boolean {
    return real === this.root || real.startsWith(`${this.root}/`);
  }

  /** Opens a directory of the workspace (following symlinks that stay inside). */
  async openDir(p: WorkspacePath, opts: { create?: boolean } = {}): Promise<FileHandle> {
    return this.walk(p, p.segments.length, opts.create ?? false);
  }

  /** Opens an existing regular file for reading. */
  async openRead(p: WorkspacePath): Promise<{ handle: FileHandle; size: number }> {
    if (p.segments.length === 0) throw new ToolError('not_a_file', `${p.virtual} is a directory, not a file`);
    const parent = await this.walk(p, p.segments.length - 1, false);
    try {
      const name = p.segments[p.segments.length - 1];
      const handle = await this.openLeaf(parent, name, p, READ_NOFOLLOW, READ_FOLLOW);
      return { handle, size: await this.regularSize(handle, p) };
    } finally {
      await parent.close();
    }
  }

  /**
   * The plain case of a read, on the main thread: the same walk as `openRead` (the root, then each
   * component opened with `O_NOFOLLOW` relative to the one before) and an `fstat`, `pread` and
   * `close` on the leaf's descriptor, all synchronous. Each asynchronous call is a hop through
   * libuv's thread pool (a futex wake, an eventfd write and an epoll wake-up, ~4 system calls on top
   * of the call itself); a small file read this way costs the seven calls and no hop.
   *
   * Bounded so the event loop is never blocked by much: only a regular file of at most `maxBytes`
   * (by `fstat`) is read, and never more than `maxBytes` (a file that grew past it since is left to
   * the asynchronous path). Anything else — a symlink on the way (`ELOOP`/`ENOTDIR` under
   * `O_NOFOLLOW`), a missing component, an error, a directory or device, a larger file — answers
   * null without interpreting it, and the caller takes `openRead`, which follows links that stay
   * inside and names the error. So this path follows no symlink and decides nothing `openRead`
   * would not: a link swapped in at any moment makes an open here fail, never succeed outside.
   */
  readSmallSync(p: WorkspacePath, maxBytes: number): { size: number; bytes: Buffer } | null {
    if (p.segments.length === 0 || maxBytes <= 0) return null;
    let dir: number;
    try {
      dir = openSync(this.root, DIR_NOFOLLOW);
    } catch {
      return null;
    }
    let fd: number;
    try {
      for (let i = 0; i < p.segments.length - 1; i++) {
        const next = openSync(atFd(dir, p.segments[i]), DIR_NOFOLLOW);
        closeSync(dir);
        dir = next;
      }
      fd = openSync(atFd(dir, p.segments[p.segments.length - 1]), READ_NOFOLLOW);
    } catch {
      return null;
    } finally {
      closeSync(dir);
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.size > maxBytes) return null;
      const bytes = readUpToSync(fd, maxBytes + 1, st.size);
      return bytes.length > maxBytes ? null : { size: st.size, bytes };
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Opens a regular file for reading and writing, creating it (and its parent directories) when
   * missing and `create` is set. Nothing is truncated here: the caller writes at offset 0 and then
   * truncates. `discard()` removes a file this call created (a write refused after opening). With a
   * `budget`, no more than `budget.left` entries (directories and the file) are created: a write that
   * needs more throws `budget.full()` before anything is made.
   */
  async openWrite(
    p: WorkspacePath,
    opts: { create: boolean; budget?: InodeBudget; landing?: WorkspacePath },
  ): Promise<WriteTarget> {
    if (p.segments.length === 0) throw new ToolError('not_a_file', `${p.virtual} is a directory, not a file`);
    const budget = opts.budget ? { ...opts.budget, start: opts.budget.left } : undefined;
    // A judged landing (see `resolve`): the path must still resolve there, and the write walks the
    // landing itself following no symlink, so a link swapped at any moment makes it fail, never
    // land elsewhere.
    const bound = opts.landing ? await this.boundLanding(p, opts.landing) : null;
    const walked = bound ?? p;
    const parent = await this.walk(walked, walked.segments.length - 1, opts.create, budget, bound !== null);
    const name = walked.segments[walked.segments.length - 1];
    try {
      let handle: FileHandle;
      let created = false;
      try {
        handle = bound
          ? await open(at(parent, name), RDWR_NOFOLLOW).catch((err: unknown) => {
              throw (err as NodeJS.ErrnoException).code === 'ELOOP' ? moved(p, bound) : ioError(err, p);
            })
          : await this.openLeaf(parent, name, p, RDWR_NOFOLLOW, RDWR_FOLLOW);
      } catch (e) {
        if (!opts.create || !(e instanceof ToolError && e.code === 'not_found') || (await isSymlink(at(parent, name))))
          throw e;
        if (budget && budget.left <= 0) throw budget.full();
        handle = await open(at(parent, name), CREATE_EXCL, FILE_MODE).catch((err: unknown) => {
          throw ioError(err, p);
        });
        created = true;
        await this.own(handle);
        if (budget) budget.left--;
      }
      const size = await this.regularSize(handle, p);
      return {
        handle,
        size,
        created,
        newInodes: budget ? budget.start - budget.left : created ? 1 : 0,
        discard: async () => {
          if (created) await unlink(at(parent, name)).catch(() => undefined);
        },
        close: async () => {
          await handle.close().catch(() => undefined);
          await parent.close().catch(() => undefined);
        },
      };
    } catch (e) {
      await parent.close();
      throw e;
    }
  }

  /**
   * Removes the entry `p` names: a file, a symlink (the link itself: the last component is never
   * followed) or an empty directory; with `recursive`, a directory and everything below it. The
   * directory holding the entry is reached like a write's (`walk`: symlinks inside the workspace
   * followed and verified; with a judged `landing`, the landing itself, following none), and every
   * entry is removed relative to an open descriptor of its directory (`unlink`/`rmdir` of
   * `/proc/self/fd/<fd>/<name>` never follow the last component). A recursive removal opens each
   * subdirectory with `O_NOFOLLOW` (a directory swapped for a symlink is refused or, met as a link,
   * unlinked), descends at most `REMOVE_MAX_DEPTH` levels and removes at most `maxEntries` entries;
   * it stops early, answering `complete: false`, at that bound or once `signal` is aborted. Never
   * the workspace root. Needs no room: it works at or over the quota.
   */
  async remove(
    p: WorkspacePath,
    opts: { recursive: boolean; maxEntries: number; landing?: WorkspacePath; signal?: AbortSignal },
  ): Promise<Removed & { kind: 'file' | 'symlink' | 'directory' | 'other' }> {
    if (p.segments.length === 0) throw new ToolError('forbidden', 'the workspace root itself cannot be deleted');
    const bound = opts.landing ? await this.boundEntry(p, opts.landing) : null;
    const walked = bound ?? p;
    const parent = await this.walk(walked, walked.segments.length - 1, false, undefined, bound !== null);
    const name = walked.segments[walked.segments.length - 1];
    try {
      const st = await lstat(at(parent, name)).catch((e: unknown) => {
        throw ioError(e, p);
      });
      if (!st.isDirectory()) {
        await unlink(at(parent, name)).catch((e: unknown) => {
          throw ioError(e, p);
        });
        const kind = st.isFile() ? 'file' : st.isSymbolicLink() ? 'symlink' : 'other';
        return { kind, bytes: st.isFile() ? st.size : 0, inodes: 1, complete: true };
      }
      const removed: Removed = { bytes: 0, inodes: 0, complete: true };
      if (opts.recursive) {
        const dir = await open(at(parent, name), DIR_NOFOLLOW).catch((e: unknown) => {
          const code = (e as NodeJS.ErrnoException).code;
          if (code === 'ELOOP' || code === 'ENOTDIR')
            throw new ToolError('forbidden', `${p.virtual} changed while it was deleted (no longer a directory)`);
          throw ioError(e, p);
        });
        try {
          await this.empty(dir, p, 1, removed, opts);
        } finally {
          await dir.close();
        }
        if (!removed.complete || !room(removed, opts)) return { kind: 'directory', ...removed };
      }
      await rmdir(at(parent, name)).catch((e: unknown) => {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOTEMPTY' || code === 'EEXIST')
          throw new ToolError(
            'invalid_argument',
            `${p.virtual} is a directory that is not empty; call delete_file with recursive=true to delete it and everything in it`,
          );
        throw ioError(e, p);
      });
      removed.inodes++;
      return { kind: 'directory', ...removed };
    } finally {
      await parent.close();
    }
  }

  /** Removes everything below the open directory `dir` (see `remove`), counting into `removed`. */
  private async empty(
    dir: FileHandle,
    p: WorkspacePath,
    depth: number,
    removed: Removed,
    opts: { maxEntries: number; signal?: AbortSignal },
  ): Promise<void> {
    if (depth > REMOVE_MAX_DEPTH)
      throw new ToolError(
        'too_large',
        `${p.virtual} nests directories deeper than ${REMOVE_MAX_DEPTH} levels; delete a deeper directory first`,
      );
    const stream = await opendir(`/proc/self/fd/${dir.fd}`, { bufferSize: 64 });
    try {
      for await (const entry of stream) {
        if (!room(removed, opts)) return;
        const name = entry.name;
        const st = await lstat(at(dir, name)).catch(() => null);
        if (st === null) continue; // gone meanwhile
        if (st.isDirectory()) {
          const child = await open(at(dir, name), DIR_NOFOLLOW).catch((e: unknown) => {
            const code = (e as NodeJS.ErrnoException).code;
            if (code === 'ELOOP' || code === 'ENOTDIR') return null; // swapped for a link or a file: unlinked below
            throw ioError(e, p);
          });
          if (child) {
            try {
              await this.empty(child, p, depth + 1, removed, opts);
            } finally {
              await child.close();
            }
            if (!removed.complete || !room(removed, opts)) return;
            await rmdir(at(dir, name)).catch((e: unknown) => {
              throw ioError(e, p);
            });
            removed.inodes++;
            continue;
          }
        }
        const gone = await unlink(at(dir, name)).then(
          () => true,
          (e: unknown) => {
            if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
            throw ioError(e, p);
          },
        );
        if (!gone) continue;
        if (st.isFile()) removed.bytes += st.size;
        removed.inodes++;
      }
    } finally {
      await stream.close().catch(() => undefined);
    }
  }

  /**
   * Where the entry a path names lands: its directory resolved like `resolve` (symlinks inside the
   * workspace followed), the last component appended as named, never followed (what `remove` acts
   * on). The root lands on itself.
   */
  async resolveEntry(p: WorkspacePath): Promise<{ landing: WorkspacePath; dangling: boolean }> {
    if (p.segments.length === 0) return this.resolveLanding(p);
    const name = p.segments[p.segments.length - 1];
    const dir = await this.resolveLanding({
      virtual: p.virtual,
      segments: p.segments.slice(0, -1),
    });
    const segments = [...dir.landing.segments, name];
    return { landing: { virtual: `/workspace/${segments.join('/')}`, segments }, dangling: dir.dangling };
  }

  /** Before a bound removal: the entry `p` names must still land on `landing`. */
  private async boundEntry(p: WorkspacePath, landing: WorkspacePath): Promise<WorkspacePath> {
    const now = await this.resolveEntry(p);
    if (now.landing.virtual !== landing.virtual) throw moved(p, landing, 'deleted');
    if (now.dangling) throw new DanglingSymlink(p.virtual);
    return landing;
  }

  /**
   * Where a path lands: the workspace path the walk of `openRead`/`openWrite`/`openDir` reaches,
   * symlinks inside the workspace followed (by the same steps, `openDirStep` and `checkLinkTarget`),
   * as the real path of the descriptor reached, with the components that do not exist yet (a write
   * creates them) appended as named. A dangling symlink lands where its target is (a write through
   * it is refused, but a rule on where it points still judges it). Throws the walk's error: outside
   * the workspace through a symlink, a file in the middle of the path, an I/O error. Symlink-free by
   * construction (a real path, then names that did not exist), which `openWrite` relies on.
   */
  async resolve(p: WorkspacePath): Promise<WorkspacePath> {
    return (await this.resolveLanding(p)).landing;
  }

  /** `resolve`, and whether the path goes through a dangling symlink (which no write follows). */
  async resolveLanding(p: WorkspacePath): Promise<{ landing: WorkspacePath; dangling: boolean }> {
    const found = (landing: WorkspacePath, dangling = false) => ({ landing, dangling });
    let current = await open(this.root, DIR_NOFOLLOW);
    try {
      for (let i = 0; i < p.segments.length; i++) {
        const name = p.segments[i];
        const here = `/workspace/${p.segments.slice(0, i + 1).join('/')}`;
        const last = i === p.segments.length - 1;
        const st = await lstat(at(current, name)).catch((e: NodeJS.ErrnoException) => {
          if (e.code === 'ENOENT') return null;
          throw ioError(e, p, here);
        });
        if (st === null) return found(this.landingOf(await this.realOf(current, p), p.segments.slice(i)));
        if (st.isSymbolicLink()) {
          let target: string;
          try {
            await this.checkLinkTarget(at(current, name), p);
            target = await realpath(at(current, name));
          } catch (e) {
            if (!(e instanceof DanglingSymlink)) throw e;
            const dangling = posix.resolve(await this.realOf(current, p), await readlink(at(current, name)));
            return found(this.landingOf(dangling, p.segments.slice(i + 1)), true);
          }
          const isDir = await stat(target).then((t) => t.isDirectory());
          if (last && !isDir) return found(this.landingOf(target, []));
        } else if (!st.isDirectory()) {
          if (last) return found(this.landingOf(await this.realOf(current, p), [name]));
          throw new ToolError('not_a_directory', `${here} is not a directory (in ${p.virtual})`);
        }
        const next = await this.openDirStep(current, name, p, here);
        await current.close();
        current = next;
      }
      return found(this.landingOf(await this.realOf(current, p), []));
    } finally {
      await current.close();
    }
  }

  /** The real path of an open directory, which must lie inside the root. */
  private async realOf(dir: FileHandle, p: WorkspacePath): Promise<string> {
    const real = await realpath(`/proc/self/fd/${dir.fd}`).catch(() => undefined);
    if (real === undefined || !this.contains(real)) throw escape(p);
    return real;
  }

  /** A real host path inside the root and names below it, as the workspace path the model would use. */
  private landingOf(real: string, rest: readonly string[]): WorkspacePath {
    const below = real === this.root ? [] : real.slice(this.root.length + 1).split('/');
    const segments = [...below, ...rest];
    return { virtual: segments.length === 0 ? '/workspace' : `/workspace/${segments.join('/')}`, segments };
  }

  /** Before a bound write: `p` must still land on `landing` (else the link changed since it was judged). */
  private async boundLanding(p: WorkspacePath, landing: WorkspacePath): Promise<WorkspacePath> {
    const now = await this.resolveLanding(p);
    if (now.landing.virtual !== landing.virtual) throw moved(p, landing);
    if (now.dangling) throw new DanglingSymlink(p.virtual);
    return landing;
  }

  /** Entries of an open directory (types from the directory itself: symlinks are not followed). */
  async entries(dir: FileHandle): Promise<Dirent[]> {
    return readdir(`/proc/self/fd/${dir.fd}`, { withFileTypes: true });
  }

  /** A child directory met during a walk; symlinks are never followed by walks. */
  async openChildDir(dir: FileHandle, name: string): Promise<FileHandle | null> {
    return open(at(dir, name), DIR_NOFOLLOW).catch(() => null);
  }

  /** A child regular file met during a walk, or null if it is anything else. */
  async openChildFile(dir: FileHandle, name: string): Promise<{ handle: FileHandle; size: number } | null> {
    const handle = await open(at(dir, name), READ_NOFOLLOW).catch(() => null);
    if (!handle) return null;
    const st = await handle.stat();
    if (!st.isFile()) {
      await handle.close();
      return null;
    }
    return { handle, size: st.size };
  }

  /** `lstat` of a child of an open directory. */
  async lstatChild(dir: FileHandle, name: string) {
    return lstat(at(dir, name));
  }

  /** Opens the root and then `count` segments of `p`, each verified; creates missing ones if asked. */
  private async walk(
    p: WorkspacePath,
    count: number,
    create: boolean,
    budget?: InodeBudget,
    noFollow = false,
  ): Promise<FileHandle> {
    let current = await open(this.root, DIR_NOFOLLOW);
    try {
      for (let i = 0; i < count; i++) {
        const name = p.segments[i];
        const here = `/workspace/${p.segments.slice(0, i + 1).join('/')}`;
        let made = false;
        if (create) {
          const missing =
            budget !== undefined &&
            (await lstat(at(current, name)).then(
              () => false,
              (e: NodeJS.ErrnoException) => e.code === 'ENOENT',
            ));
          // Every component from here on is missing, and the file after them: all or nothing.
          if (missing && budget && count - i + 1 > budget.left) throw budget.full();
          made = await mkdir(at(current, name), DIR_MODE).then(
            () => true,
            (e: unknown) => {
              if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw ioError(e, p, here);
              return false;
            },
          );
          if (made && budget) budget.left--;
        }
        const next = noFollow
          ? await open(at(current, name), DIR_NOFOLLOW).catch(async (err: unknown) => {
              const code = (err as NodeJS.ErrnoException).code;
              if ((code === 'ELOOP' || code === 'ENOTDIR') && (await isSymlink(at(current, name))))
                throw new ToolError(
                  'forbidden',
                  `${here} became a symlink after the approval gate judged ${p.virtual}: nothing was written`,
                );
              throw ioError(err, p, here);
            })
          : await this.openDirStep(current, name, p, here);
        await current.close();
        current = next;
        if (made) await this.own(current);
      }
      return current;
    } catch (e) {
      await current.close();
      throw e;
    }
  }

  private async openDirStep(dir: FileHandle, name: string, p: WorkspacePath, here: string): Promise<FileHandle> {
    try {
      return await open(at(dir, name), DIR_NOFOLLOW);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // O_DIRECTORY|O_NOFOLLOW answers ENOTDIR for a symlink too: tell the two apart.
      if (code !== 'ENOTDIR' && code !== 'ELOOP') throw ioError(e, p, here);
      if (!(await isSymlink(at(dir, name)))) {
        throw new ToolError(
          'not_a_directory',
          here === p.virtual ? `${here} is not a directory` : `${here} is not a directory (in ${p.virtual})`,
        );
      }
      await this.checkLinkTarget(at(dir, name), p);
      const handle = await open(at(dir, name), DIR_FOLLOW).catch((err: unknown) => {
        throw ioError(err, p, here);
      });
      await this.verify(handle, p);
      return handle;
    }
  }

  /** Opens the last component: without following; if it is a symlink, follows it only into the root. */
  private async openLeaf(
    dir: FileHandle,
    name: string,
    p: WorkspacePath,
    noFollow: number,
    follow: number,
  ): Promise<FileHandle> {
    try {
      return await open(at(dir, name), noFollow);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ELOOP') throw ioError(e, p);
    }
    await this.checkLinkTarget(at(dir, name), p);
    const handle = await open(at(dir, name), follow).catch((err: unknown) => {
      throw ioError(err, p);
    });
    await this.verify(handle, p);
    return handle;
  }

  /** Before following a symlink: its target must exist and lie inside the root. */
  private async checkLinkTarget(link: string, p: WorkspacePath): Promise<void> {
    let target: string;
    try {
      target = await realpath(link);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        // A dangling link: where it points decides (a write must never create a file outside).
        if (!(await this.danglingTargetInside(link))) throw escape(p);
        throw new DanglingSymlink(p.virtual);
      }
      throw ioError(e, p);
    }
    if (!this.contains(target)) throw escape(p);
  }

  /** Whether a dangling symlink's target, resolved lexically against the link's real directory, lies inside. */
  private async danglingTargetInside(link: string): Promise<boolean> {
    try {
      const target = await readlink(link);
      const dir = await realpath(posix.dirname(link));
      return this.contains(posix.resolve(dir, target));
    } catch {
      return false;
    }
  }

  /** After opening: the descriptor's real path must lie inside the root. */
  private async verify(handle: FileHandle, p: WorkspacePath): Promise<void> {
    let real: string | undefined;
    try {
      real = await realpath(`/proc/self/fd/${handle.fd}`);
    } catch {
      real = undefined;
    }
    if (real === undefined || !this.contains(real)) {
      await handle.close();
      throw escape(p);
    }
  }

  private async regularSize(handle: FileHandle, p: WorkspacePath): Promise<number> {
    const st = await handle.stat();
    if (st.isFile()) return st.size;
    await handle.close();
    if (st.isDirectory()) throw new ToolError('not_a_file', `${p.virtual} is a directory, not a file`);
    throw new ToolError('not_a_file', `${p.virtual} is not a regular file`);
  }
}

/**
 * The first `max` bytes of an open regular file (fewer at its end), into a buffer sized for the
 * `expected` size an `fstat` saw (one byte more, to notice growth). A short read ends it once the
 * expected size is reached (a regular file answers short only at its end), so the common case is
 * one `pread`.
 */
function readUpToSync(fd: number, max: number, expected: number): Buffer {
  let buf = Buffer.allocUnsafe(Math.max(1, Math.min(max, expected + 1)));
  let got = 0;
  for (;;) {
    const n = readSync(fd, buf, got, buf.length - got, got);
    got += n;
    if (n === 0 || (got >= expected && got < buf.length)) break;
    if (got === buf.length) {
      if (buf.length >= max) break;
      const bigger = Buffer.allocUnsafe(Math.min(max, buf.length * 2));
      buf.copy(bigger, 0, 0, got);
      buf = bigger;
    }
  }
  return buf.subarray(0, got);
}

/** Whether a removal may take one more entry; else it is marked incomplete. */
function room(removed: Removed, opts: { maxEntries: number; signal?: AbortSignal }): boolean {
  if (removed.inodes < opts.maxEntries && !opts.signal?.aborted) return true;
  removed.complete = false;
  return false;
}

async function isSymlink(path: string): Promise<boolean> {
  return lstat(path).then(
    (s) => s.isSymbolicLink(),
    () => false,
  );
}

/** A bound write (or removal) whose path no longer leads where it was judged (a symlink changed): nothing is written. */
function moved(p: WorkspacePath, landing: WorkspacePath, what = 'written'): ToolError {
  return new ToolError(
    'forbidden',
    `${p.virtual} no longer leads to ${landing.virtual}, where the approval gate judged it (a symlink changed since the check): nothing was ${what}`,
  );
}

function escape(p: WorkspacePath): ToolError {
  return new ToolError(
    'outside_workspace',
    `${p.virtual} resolves outside the workspace (through a symlink); access refused`,
  );
}

/** Maps a file-system error to a sentence naming the workspace path, never the host path. */
export function ioError(e: unknown, p: WorkspacePath, at: string = p.virtual): ToolError {
  if (e instanceof ToolError) return e;
  const code = (e as NodeJS.ErrnoException | undefined)?.code ?? '';
  switch (code) {
    case 'ENOENT':
      return new ToolError(
        'not_found',
        at === p.virtual ? `no such file or directory: ${p.virtual}` : `no such directory: ${at} (in ${p.virtual})`,
      );
    case 'ENOTDIR':
      return new ToolError('not_a_directory', `a component of ${p.virtual} is not a directory`);
    case 'EISDIR':
      return new ToolError('not_a_file', `${p.virtual} is a directory, not a file`);
    case 'ELOOP':
      return new ToolError('invalid_argument', `too many levels of symbolic links: ${p.virtual}`);
    case 'ENAMETOOLONG':
      return new ToolError('invalid_argument', `path too long: ${p.virtual}`);
    case 'EACCES':
    case 'EPERM':
      return new ToolError('io', `permission denied: ${at}`);
    case 'ENOSPC':
    case 'EDQUOT':
      return new ToolError('quota_exceeded', `no space left on the device while writing ${p.virtual}`);
    case 'EROFS':
      return new ToolError('io', `read-only file system: ${p.virtual}`);
    default:
      return new ToolError('io', `I/O error on ${p.virtual}${code ? ` (${code})` : ''}`);
  }
}
