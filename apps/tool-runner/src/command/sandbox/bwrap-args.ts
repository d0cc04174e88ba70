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
  /** Load the syscall filter from fd `SECCOMP_FD` (the launcher opens it). */
  seccomp: boolean;
  /**
   * A HOME of its own (a stdio MCP server's): a fresh tmpfs of `tmpSizeBytes` at this path, which is
   * also the working directory (`cwd` is then ignored). Without it HOME is `/workspace` (a command's).
   */
  home?: string;
}

/** Uid/gid of the sandbox user inside its user namespace (mapped to the runner's own uid outside). */
export const SANDBOX_UID = 1000;
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/**
 * HOME and working directory of a stdio MCP server inside its sandbox: a tmpfs of its own, not the
 * workspace (which the model's commands write). The server reaches the workspace at `/workspace`.
 */
export const MCP_HOME = '/mcp-home';

/**
 * The launch script inside the sandbox: bwrap copies it from `LAUNCH_FD` (`--file`) and the sandbox's
 * own shell runs it (`SANDBOX_ENTRY`). It is the command of `execute_cmd`, or the variables and the
 * argv of an MCP server (`execScript`): what a tenant or the model wrote is data read inside the
 * sandbox, never an argument, an environment variable or a working directory of a host process.
 */
export const LAUNCH_FILE = '/.skald-launch';
/** The sandbox's argv after `--`: fixed. `.` keeps `sh -c` semantics (`$0`, one shell, no fork). */
export const SANDBOX_ENTRY = ['/bin/sh', '-c', `. ${LAUNCH_FILE}`] as const;
/** Launcher fds: 3 = limits line then bwrap's NUL-separated options (`--args`), 4 = launch script, 5 = seccomp BPF. */
export const ARGS_FD = 3;
export const LAUNCH_FD = 4;
export const SECCOMP_FD = 5;

/**
 * The bubblewrap options for one sandbox (a command or a stdio MCP server): every namespace new
 * (user, pid, net unless allowed, ipc, uts, cgroup), no capabilities, no nested user namespaces, a
 * fresh session (no TIOCSTI), dies with the runner, the syscall filter, an environment of exactly
 * PATH/HOME/LANG/TERM/USER/TMPDIR (an MCP server's own variables are exported by its launch script,
 * inside), system directories read-only, a private size-bounded `/tmp`, the workspace read-write
 * at `/workspace`, and the launch script at `LAUNCH_FILE`. Read by bwrap from a file descriptor
 * (`--args`), never from its command line; no option may contain a NUL byte (it separates them).
 */
export function bwrapOptions(spec: SandboxSpec): string[] {
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
  if (spec.seccomp) a.push('--seccomp', String(SECCOMP_FD));
  a.push('--clearenv', '--setenv', 'PATH', SANDBOX_PATH, '--setenv', 'LANG', 'C.UTF-8', '--setenv', 'TERM', 'dumb');
  a.push('--setenv', 'HOME', spec.home ?? '/workspace', '--setenv', 'USER', 'sandbox', '--setenv', 'TMPDIR', '/tmp');
  for (const dir of spec.layout.roDirs) a.push('--ro-bind', dir, dir);
  for (const link of spec.layout.symlinks) a.push('--symlink', link.target, link.at);
  for (const g of spec.layout.generated) a.push('--ro-bind', g.src, g.dest);
  // The private /tmp before the read-only binds: a bind of a host path under /tmp (an operator's
  // SKALD_SANDBOX_RO_BINDS) must land on top of it, not be hidden by it.
  // Every tmpfs the sandbox can write is sized: /tmp and /dev/shm get `tmpSizeBytes` each; the root
  // and /dev (tmpfs mounts bwrap makes, owned by the sandbox user) are made read-only at the end, so
  // no unsized tmpfs is writable (where no memory cgroup counts tmpfs pages, nothing else bounds it).
  a.push('--proc', '/proc', '--dev', '/dev', '--size', String(spec.tmpSizeBytes), '--tmpfs', '/tmp');
  a.push('--size', String(spec.tmpSizeBytes), '--tmpfs', '/dev/shm');
  // A server's HOME: in this sandbox's mount namespace only, empty at every start, so no dotfile a
  // command wrote (`.npmrc`, `.bashrc`, `.profile`, `.config/…` in /workspace) is read by a program
  // that holds the server's credentials, and nothing the server keeps there is seen by a command.
  if (spec.home !== undefined) a.push('--size', String(spec.tmpSizeBytes), '--tmpfs', spec.home);
  for (const file of spec.layout.roFiles) a.push('--ro-bind', file, file);
  a.push('--perms', '0444', '--file', String(LAUNCH_FD), LAUNCH_FILE);
  a.push('--bind', spec.workspace, '/workspace', '--chdir', spec.home ?? spec.cwd);
  a.push('--remount-ro', '/dev', '--remount-ro', '/');
  for (const o of a) if (o.includes('\0')) throw new Error('a sandbox option contains a NUL byte');
  return a;
}

/** A word for the POSIX shell, exactly as given: single quotes, each `'` written as `'\''`. */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}

/**
 * The launch script of an MCP server: its variables exported, then its argv `exec`ed (looked up on
 * the sandbox's PATH). Names must be environment names (`ENV_NAME`); NUL bytes cannot be passed.
 */
export function execScript(env: Record<string, string>, argv: readonly string[]): string {
  const lines: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name)) throw new Error(`${JSON.stringify(name)} is not an environment variable name`);
    lines.push(`export ${name}=${shellQuote(value)}`);
  }
  for (const w of [...Object.values(env), ...argv])
    if (w.includes('\0')) throw new Error('an MCP server variable or argument contains a NUL byte');
  lines.push(`exec ${argv.map(shellQuote).join(' ')}`);
  return `${lines.join('\n')}\n`;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Per-process limits the launcher shell sets (`ulimit`) before it becomes bwrap. */
export interface ShellLimits {
  cpuSeconds: number;
  fileSizeBytes: number;
  /**
   * RLIMIT_DATA (writable private memory: heap, anonymous mappings), only when no memory cgroup bounds
   * the tree. Not RLIMIT_AS: runtimes reserve address space they never use (V8 reserves more than
   * 1 GiB for a worker thread), data is what a process really takes.
   */
  dataBytes?: number;
  /**
   * RLIMIT_NPROC, set by the sandbox's own shell once bwrap has made the sandbox's user namespace:
   * the kernel counts a process against it at every user-namespace level (Linux ≥ 5.14), and at
   * the sandbox's level only that sandbox's processes exist, so it bounds each sandbox on its own;
   * the levels outside are held to the limit bwrap had when it made the namespace (the runner's).
   * Root's processes are exempt, hence `uid`.
   */
  processes: number;
  /** Run bwrap as this uid and gid (through setpriv) instead of the runner's own. */
  uid?: number;
}

/**
 * The launcher, `/bin/sh -c <script> sh <bwrap> <setpriv or ''> <seccomp BPF file or ''> <cgroup.procs
 * files…>`, spawned with fd 3 and 4 as pipes: it puts itself into the call's cgroups (so every process
 * bwrap creates is counted from the first fork), then waits on fd 3 for its call (`launcherInput`): it
 * lowers its rlimits and `exec`s bwrap (through setpriv, as the tenant's uid, when the call names
 * one), which reads its options from the rest of fd 3 (`--args`) and the launch script from fd 4
 * (`--file`); the filter is opened on fd 5. Inside, the sandbox's shell sets RLIMIT_NPROC before
 * it reads the launch script. Its argv, environment (PATH only) and working directory (`/`) are the
 * runner's own constants: nothing of a call is in them. Spawned ahead of its call, it takes the fork
 * of the service, the shell's start and the cgroup moves off the command's start path; when the
 * runner dies first, fd 3 ends and it exits.
 */
export const LAUNCHER_SCRIPT = [
  'b=$1 u=$2 s=$3',
  'shift 3',
  'for f do echo $$ > "$f" || exit 125; done',
  'read -r cpu fsize mem nproc uid <&3 || exit 125',
  'ulimit -t "$cpu" && ulimit -f "$fsize" || exit 125',
  '[ "$mem" = - ] || ulimit -d "$mem" || exit 125',
  'if [ "$uid" = - ]; then set -- "$b"; else set -- "$u" --reuid="$uid" --regid="$uid" --clear-groups -- "$b"; fi',
  `[ -z "$s" ] || exec "$@" --args ${ARGS_FD} -- ${SANDBOX_ENTRY.slice(0, 2).join(' ')} "ulimit -p $nproc && ${SANDBOX_ENTRY[2]}" ${SECCOMP_FD}<"$s"`,
  `exec "$@" --args ${ARGS_FD} -- ${SANDBOX_ENTRY.slice(0, 2).join(' ')} "ulimit -p $nproc && ${SANDBOX_ENTRY[2]}"`,
].join('\n');

/** Argv of a launcher. */
export function launcherArgs(
  bwrap: string,
  seccompFile: string | null,
  cgroupProcs: string[],
  setpriv: string | null = null,
): string[] {
  return ['-c', LAUNCHER_SCRIPT, 'sh', bwrap, setpriv ?? '', seccompFile ?? '', ...cgroupProcs];
}

/** What a launcher reads on fd 3: a line of limits, then bwrap's options NUL-separated (`--args`). */
export function launcherInput(limits: ShellLimits, options: string[]): Buffer {
  const cpu = Math.max(1, Math.ceil(limits.cpuSeconds));
  // ulimit -f counts 512-byte blocks, ulimit -d KiB.
  const fsize = Math.max(0, Math.floor(limits.fileSizeBytes / 512));
  const mem = limits.dataBytes !== undefined ? String(Math.floor(limits.dataBytes / 1024)) : '-';
  const nproc = Math.max(1, Math.floor(limits.processes));
  const uid = limits.uid !== undefined ? String(Math.floor(limits.uid)) : '-';
  return Buffer.from(`${cpu} ${fsize} ${mem} ${nproc} ${uid}\n${options.map((o) => `${o}\0`).join('')}`);
}
