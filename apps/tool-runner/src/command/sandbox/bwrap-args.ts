/** The sandbox's view of the host file system, computed once at start (see `SandboxLayout.detect`). */
export interface SandboxLayout {
  /** Host directories bound read-only at the same place (`/usr`, a real `/lib`…). */
  roDirs: string[];
  /** Top-level symlinks recreated inside (`/bin -> usr/bin` on merged-/usr systems). */
  symlinks: { target: string; at: string }[];
  /** Host files or directories bound read-only at the same place (after `generated`). */
  roFiles: string[];
  /** Directories prepared by the runner, bound read-only at `dest` (its `/etc`: passwd naming the sandbox user…). */
  generated: { src: string; dest: string }[];
}

export interface SandboxSpec {
  layout: SandboxLayout;
  /** Host directory of the user's workspace, bound read-write at `/workspace`. */
  workspace: string;
  /** Working directory inside the sandbox (`/workspace/…`). */
  cwd: string;
  network: boolean;
  tmpSizeBytes: number;
  command: string;
}

/** Uid/gid of the sandbox user inside its user namespace (mapped to the runner's own uid outside). */
export const SANDBOX_UID = 1000;
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The bubblewrap command line for one command: every namespace new (user, pid, net unless allowed,
 * ipc, uts, cgroup), no capabilities, no nested user namespaces, a fresh session (no TIOCSTI), dies
 * with the runner, an environment of exactly PATH/HOME/LANG/TERM/USER/TMPDIR, system directories
 * read-only, a private size-bounded `/tmp`, and the workspace read-write at `/workspace`.
 * Pure: the runner adds limits around it.
 */
export function bwrapArgs(spec: SandboxSpec): string[] {
  const a: string[] = ['--unshare-all', '--unshare-user'];
  if (spec.network) a.push('--share-net');
  a.push(
    '--uid',
    String(SANDBOX_UID),
    '--gid',
    String(SANDBOX_UID),
    '--disable-userns',
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    '--new-session',
    '--hostname',
    'sandbox',
    '--clearenv',
    '--setenv',
    'PATH',
    SANDBOX_PATH,
    '--setenv',
    'HOME',
    '/workspace',
    '--setenv',
    'LANG',
    'C.UTF-8',
    '--setenv',
    'TERM',
    'dumb',
    '--setenv',
    'USER',
    'sandbox',
    '--setenv',
    'TMPDIR',
    '/tmp',
  );
  for (const dir of spec.layout.roDirs) a.push('--ro-bind', dir, dir);
  for (const link of spec.layout.symlinks) a.push('--symlink', link.target, link.at);
  for (const g of spec.layout.generated) a.push('--ro-bind', g.src, g.dest);
  for (const file of spec.layout.roFiles) a.push('--ro-bind', file, file);
  a.push(
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(spec.tmpSizeBytes),
    '--tmpfs',
    '/tmp',
    '--bind',
    spec.workspace,
    '/workspace',
    '--chdir',
    spec.cwd,
    '--',
    '/bin/sh',
    '-c',
    spec.command,
  );
  return a;
}

/** Per-process limits applied by the launcher shell (`ulimit`) before it becomes bwrap. */
export interface ShellLimits {
  cpuSeconds: number;
  fileSizeBytes: number;
  /** RLIMIT_AS, only when no memory cgroup bounds the tree. */
  addressSpaceBytes?: number;
}

/**
 * The launcher: `/bin/sh -c <script> sh <bwrap> <args…>`. The shell puts itself into the call's
 * cgroups (so every process bwrap creates is counted from the first fork), lowers its rlimits and
 * `exec`s bwrap. Paths and numbers are passed as positional arguments, never spliced into code.
 */
export function launcherArgs(bwrap: string, bwrapArgv: string[], cgroupProcs: string[], limits: ShellLimits): string[] {
  const lines: string[] = [];
  cgroupProcs.forEach((_, i) => lines.push(`echo $$ > "$${i + 1}" || exit 125`));
  const n = cgroupProcs.length;
  lines.push(`ulimit -t "$${n + 1}" && ulimit -f "$${n + 2}" || exit 125`);
  if (limits.addressSpaceBytes !== undefined) lines.push(`ulimit -v "$${n + 3}" || exit 125`);
  const shift = n + 3;
  lines.push(`shift ${shift}`, 'exec "$@"');
  return [
    '-c',
    lines.join('\n'),
    'sh',
    ...cgroupProcs,
    String(Math.max(1, Math.ceil(limits.cpuSeconds))),
    // ulimit -f counts 512-byte blocks.
    String(Math.max(0, Math.floor(limits.fileSizeBytes / 512))),
    String(limits.addressSpaceBytes !== undefined ? Math.floor(limits.addressSpaceBytes / 1024) : 0),
    bwrap,
    ...bwrapArgv,
  ];
}
