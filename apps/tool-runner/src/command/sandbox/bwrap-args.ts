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
 * The bubblewrap options for one command: every namespace new (user, pid, net unless allowed, ipc,
 * uts, cgroup), no capabilities, no nested user namespaces, a fresh session (no TIOCSTI), dies with
 * the runner, an environment of exactly PATH/HOME/LANG/TERM/USER/TMPDIR, system directories
 * read-only, a private size-bounded `/tmp`, and the workspace read-write at `/workspace`.
 * Everything but the command, which `bwrapArgs` and the launcher put after `--`.
 *
 * `env: 'inherited'` (MCP stdio servers) keeps the environment bwrap was started with — the
 * server's own configured variables, which must never appear on a command line — and only names
 * the sandbox user in it.
 */
export function bwrapOptions(spec: Omit<SandboxSpec, 'command'>, env: 'cleared' | 'inherited' = 'cleared'): string[] {
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
  );
  if (env === 'cleared')
    a.push('--clearenv', '--setenv', 'PATH', SANDBOX_PATH, '--setenv', 'LANG', 'C.UTF-8', '--setenv', 'TERM', 'dumb');
  else a.push('--unsetenv', 'LOGNAME', '--unsetenv', 'SHELL');
  a.push('--setenv', 'HOME', '/workspace', '--setenv', 'USER', 'sandbox', '--setenv', 'TMPDIR', '/tmp');
  for (const dir of spec.layout.roDirs) a.push('--ro-bind', dir, dir);
  for (const link of spec.layout.symlinks) a.push('--symlink', link.target, link.at);
  for (const g of spec.layout.generated) a.push('--ro-bind', g.src, g.dest);
  // The private /tmp before the read-only binds: a bind of a host path under /tmp (an operator's
  // SKALD_SANDBOX_RO_BINDS) must land on top of it, not be hidden by it.
  a.push('--proc', '/proc', '--dev', '/dev', '--size', String(spec.tmpSizeBytes), '--tmpfs', '/tmp');
  for (const file of spec.layout.roFiles) a.push('--ro-bind', file, file);
  a.push('--bind', spec.workspace, '/workspace', '--chdir', spec.cwd);
  return a;
}

/** The whole bubblewrap command line for one command: the options, then `-- /bin/sh -c <command>`. */
export function bwrapArgs(spec: SandboxSpec): string[] {
  return [...bwrapOptions(spec), '--', '/bin/sh', '-c', spec.command];
}

/** Per-process limits the launcher shell sets (`ulimit`) before it becomes bwrap. */
export interface ShellLimits {
  cpuSeconds: number;
  fileSizeBytes: number;
  /** RLIMIT_AS, only when no memory cgroup bounds the tree. */
  addressSpaceBytes?: number;
}

/**
 * The launcher, `/bin/sh -c <script> sh <bwrap> <command or ''> <cgroup.procs files…>`: it puts
 * itself into the call's cgroups (so every process bwrap creates is counted from the first fork),
 * then waits on stdin for its call (`launcherInput`): it lowers its rlimits, reads the command
 * (unless it came as an argument) and `exec`s bwrap, which reads its options from fd 3 (`--args`,
 * the rest of stdin); the command's stdin is /dev/null. Spawned ahead of its call, it takes the
 * fork of the service, the shell's start and the cgroup moves off the command's start path; when
 * the runner dies first, stdin ends and it exits. Nothing is spliced into code: paths, numbers and
 * the command are data.
 */
export const LAUNCHER_SCRIPT = [
  'b=$1 c=$2',
  'shift 2',
  'for f do echo $$ > "$f" || exit 125; done',
  'read -r cpu fsize vmem lines || exit 125',
  'ulimit -t "$cpu" && ulimit -f "$fsize" || exit 125',
  '[ "$vmem" = - ] || ulimit -v "$vmem" || exit 125',
  'if [ "$lines" != - ]; then',
  '  IFS= read -r c || exit 125',
  '  while [ "$lines" -gt 1 ]; do',
  '    IFS= read -r l || exit 125',
  '    c="$c',
  '$l"',
  '    lines=$((lines - 1))',
  '  done',
  'fi',
  'exec "$b" --args 3 -- /bin/sh -c "$c" 3<&0 0</dev/null',
].join('\n');

/**
 * Commands up to this size are sent on the launcher's stdin (the shell reads them a byte at a time,
 * about 0.4 ms a KiB); a longer one is given to a launcher spawned for it, as an argument.
 */
export const STDIN_COMMAND_MAX = 4096;

/** Argv of a launcher; `command` only for one spawned for a long command (see `STDIN_COMMAND_MAX`). */
export function launcherArgs(bwrap: string, cgroupProcs: string[], command?: string): string[] {
  return ['-c', LAUNCHER_SCRIPT, 'sh', bwrap, command ?? '', ...cgroupProcs];
}

/**
 * What a launcher reads on stdin: a line of limits and the command's line count (`-` when the
 * command came as an argument), the command's lines, then bwrap's options NUL-separated (`--args`).
 */
export function launcherInput(limits: ShellLimits, command: string | null, options: string[]): Buffer {
  const cpu = Math.max(1, Math.ceil(limits.cpuSeconds));
  // ulimit -f counts 512-byte blocks, ulimit -v KiB.
  const fsize = Math.max(0, Math.floor(limits.fileSizeBytes / 512));
  const vmem = limits.addressSpaceBytes !== undefined ? String(Math.floor(limits.addressSpaceBytes / 1024)) : '-';
  const lines = command === null ? null : command.split('\n');
  const head = `${cpu} ${fsize} ${vmem} ${lines === null ? '-' : lines.length}\n`;
  const body = lines === null ? '' : lines.map((l) => `${l}\n`).join('');
  return Buffer.concat([Buffer.from(head + body), Buffer.from(options.map((o) => `${o}\0`).join(''))]);
}
