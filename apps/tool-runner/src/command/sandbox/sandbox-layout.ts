import { chmod, copyFile, lstat, mkdir, mkdtemp, readdir, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { SANDBOX_UID, SandboxLayout } from './bwrap-args';

/** Top-level system directories: bound read-only when they are directories, recreated when symlinks. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/**
 * The part of `/etc` a command needs to run programs (dynamic linker, TLS roots, time zone, MIME
 * types). Nothing else of the host's `/etc` is visible: no shadow, no service configs, no keys.
 */
const ETC_WHITELIST = [
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/alternatives',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/localtime',
  '/etc/timezone',
  '/etc/mime.types',
  '/etc/protocols',
  '/etc/services',
  '/etc/os-release',
];

export interface DetectedLayout {
  layout: SandboxLayout;
  /** Removes the generated files. */
  dispose(): Promise<void>;
}

/**
 * Looks at the host once and writes the generated `/etc` files (a passwd and group naming the
 * sandbox user, a loopback-only hosts, nsswitch) into a private temp directory.
 */
export async function detectLayout(opts: { network: boolean; extraRo: string[] }): Promise<DetectedLayout> {
  const roDirs: string[] = [];
  const symlinks: { target: string; at: string }[] = [];
  for (const dir of SYSTEM_DIRS) {
    const st = await lstat(dir).catch(() => null);
    if (!st) continue;
    if (st.isSymbolicLink()) symlinks.push({ target: await readlink(dir), at: dir });
    else if (st.isDirectory()) roDirs.push(dir);
  }
  // One directory becomes the sandbox's /etc, a single bind mount (each mount costs every command's
  // start-up time, ~0.1 ms): the generated files and copies of the whitelisted files and directories.
  const dir = await mkdtemp(join(tmpdir(), 'skald-sandbox-etc-'));
  const roFiles: string[] = [];
  const wanted = [...ETC_WHITELIST, ...(opts.network ? ['/etc/resolv.conf', '/etc/gai.conf'] : [])];
  await Promise.all(wanted.map((path) => copyWorldReadable(path, join(dir, basename(path)))));
  for (const path of opts.extraRo) if (await lstat(path).catch(() => null)) roFiles.push(path);
  const files: Record<string, string> = {
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:${SANDBOX_UID}:${SANDBOX_UID}:sandbox:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nsandbox:x:${SANDBOX_UID}:\nnogroup:x:65534:\n`,
    hosts: '127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n',
    'nsswitch.conf': 'passwd: files\ngroup: files\nhosts: files dns\n',
  };
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content, { mode: 0o644 });
  await chmod(dir, 0o755);
  const generated = [{ src: dir, dest: '/etc' }];
  return {
    layout: { roDirs, symlinks, roFiles, generated },
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * Copies a file, a symlink or a directory tree, leaving out whatever an unprivileged user could not
 * read on the host (`/etc/ssl/private`…): the sandbox user is the runner's own uid outside, so a
 * bind mount would show it root's files as its own.
 */
async function copyWorldReadable(src: string, dest: string): Promise<void> {
  const st = await lstat(src).catch(() => null);
  if (!st) return;
  if (st.isSymbolicLink()) await symlink(await readlink(src), dest);
  else if (st.isFile() && (st.mode & 0o004) !== 0) await copyFile(src, dest);
  else if (st.isDirectory() && (st.mode & 0o005) === 0o005) {
    await mkdir(dest, { mode: 0o755 });
    await Promise.all((await readdir(src)).map((name) => copyWorldReadable(join(src, name), join(dest, name))));
  }
}
