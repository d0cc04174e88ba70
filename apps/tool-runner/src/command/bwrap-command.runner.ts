import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import type { ChildProcess } from 'node:child_process';
import { access, chown, constants as FS, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, delimiter, isAbsolute, join, resolve } from 'node:path';
import { LOGGER, TOOL_RUNNER_CONFIG, ToolRunnerConfig } from '../config';
import { formatBytes } from '../workspace/workspaces.service';
import type { Logger } from '@skald/service-kit';
import { CommandOutcome, CommandRequest, CommandRunner, SandboxStatus } from './command-runner';
import { OutputCapture } from './output-capture';
import { OUTPUT_MAX_BYTES } from './plain-command.runner';
import { bwrapOptions, launcherInput, MCP_HOME, SandboxLayout } from './sandbox/bwrap-args';
import { Cgroups } from './sandbox/cgroups';
import { Launcher, Launchers } from './sandbox/launchers';
import type { StdioProcess } from '../mcp/bounded-stdio-transport';
import { detectLayout } from './sandbox/sandbox-layout';
import { canSwitchUids, TenantUids } from './sandbox/tenant-uids';

/** After the sandbox exits, how long to wait for its pipes to close. */
const DRAIN_MS = 200;
/** Largest file a command may write when the caller sets no bound. */
const DEFAULT_MAX_FILE = 1024 ** 3;

export type BwrapConfig = Pick<
  ToolRunnerConfig,
  | 'SKALD_SANDBOX_NET'
  | 'SKALD_SANDBOX_BWRAP'
  | 'SKALD_SANDBOX_MEMORY'
  | 'SKALD_SANDBOX_PIDS'
  | 'SKALD_SANDBOX_CPUS'
  | 'SKALD_SANDBOX_TMP_SIZE'
  | 'SKALD_SANDBOX_CGROUPS'
  | 'SKALD_SANDBOX_RO_BINDS'
  | 'SKALD_MCP_NETWORK'
  | 'SKALD_SANDBOX_SECCOMP'
  | 'SKALD_SANDBOX_UNBOUNDED'
  | 'SKALD_SANDBOX_UID_BASE'
  | 'SKALD_SANDBOX_UID_COUNT'
>;

/** The checked-in syscall filters (`seccomp/generate.c`), by Node's name of the architecture. */
const SECCOMP_DIR = resolve(__dirname, '../../seccomp');
const SECCOMP_ARCH: Partial<Record<string, string>> = { x64: 'x86_64', arm64: 'aarch64' };

/** The filter of this architecture, or why there is none. */
export async function seccompFilter(arch: string = process.arch): Promise<string> {
  const name = SECCOMP_ARCH[arch];
  if (!name)
    throw new Error(
      `no syscall filter for the ${arch} architecture (only x86_64 and aarch64 have one); set SKALD_SANDBOX_SECCOMP=off to run sandboxes without one`,
    );
  const file = join(SECCOMP_DIR, `${name}.bpf`);
  await access(file, FS.R_OK).catch(() => {
    throw new Error(
      `the syscall filter ${file} is missing; set SKALD_SANDBOX_SECCOMP=off to run sandboxes without one`,
    );
  });
  return file;
}

interface Running {
  stop(): void;
  done: Promise<unknown>;
}

/**
 * `execute_cmd` under bubblewrap. Each command gets new user, pid, network (unless
 * `SKALD_SANDBOX_NET=on`), ipc, uts and cgroup namespaces, no capabilities, a cleared environment,
 * system directories read-only, a private size-bounded `/tmp` and the user's workspace at
 * `/workspace`; its own cgroups bound processes, memory and CPU share (rlimits bound CPU seconds
 * and file size, and memory per process where no memory cgroup is available). The launcher is
 * spawned with an environment of PATH only: bwrap is pid 1 of the sandbox and its
 * `/proc/1/environ` is readable inside.
 *
 * Killing bwrap (the pid namespace's init) takes every process of the command with it, `setsid`
 * and `nohup` ones included; the call's cgroups are then emptied and removed, so no process of a
 * call outlives it. `init()` runs a self-test; until it passes, commands are refused (fail closed).
 *
 * The launcher of a call (a shell that joins the call's cgroups, sets its rlimits and becomes
 * bwrap) is spawned before the call and waits for it (`Launchers`), so a command's start costs
 * bwrap alone.
 */
@Injectable()
export class BwrapCommandRunner extends CommandRunner implements OnApplicationShutdown {
  private status?: Promise<SandboxStatus>;
  private layout?: SandboxLayout;
  private disposeLayout?: () => Promise<void>;
  private cgroups?: Cgroups;
  private launchers?: Launchers;
  /** Tenant uids to run sandboxes as (a root runner without a pids cgroup), else null. */
  private tenantUids: TenantUids | null = null;
  /** The syscall filter's BPF file, when the architecture has one. */
  private seccompFile: string | null = null;
  private readonly running = new Set<Running>();
  private readonly onExit = (): void => {
    for (const r of this.running) r.stop();
    this.launchers?.killWaiting();
  };

  constructor(
    @Inject(TOOL_RUNNER_CONFIG) private readonly config: BwrapConfig,
    @Inject(LOGGER) private readonly log: Logger,
  ) {
    super();
    process.once('exit', this.onExit);
  }

  init(): Promise<SandboxStatus> {
    this.status ??= this.start().catch((e: unknown): SandboxStatus => ({
      available: false,
      kind: 'bwrap',
      summary: `sandbox unavailable: ${e instanceof Error ? e.message : String(e)}`,
    }));
    return this.status;
  }

  async run(req: CommandRequest): Promise<CommandOutcome> {
    const status = await this.init();
    if (!status.available || !this.layout || !this.launchers) throw new Error(status.summary);
    return this.runIn(this.launchers, req);
  }

  /**
   * A long-lived program talking on stdin/stdout (a stdio MCP server) in a sandbox exactly like a
   * command's: the same options, uid, filesystem view, syscall filter and limits (cgroups of its own;
   * CPU seconds bounded by `cpuSeconds`) — except its HOME and working directory, a fresh tmpfs at
   * `MCP_HOME` no command sees (not `/workspace`, whose dotfiles the model writes). `script` is its
   * launch script (`execScript`).
   */
  async spawnServer(spec: {
    workspace: string;
    network: boolean;
    script: string;
    cpuSeconds: number;
    maxFileBytes: number;
  }): Promise<StdioProcess> {
    const status = await this.init();
    if (!status.available || !this.layout || !this.launchers) throw new Error(status.summary);
    const uid = await this.tenantUids?.uidFor(spec.workspace);
    const launcher = await this.launchers.spawnInteractive();
    const input = launcherInput(
      {
        cpuSeconds: spec.cpuSeconds,
        fileSizeBytes: spec.maxFileBytes,
        dataBytes: this.cgroups?.has('memory') ? undefined : this.config.SKALD_SANDBOX_MEMORY,
        processes: this.config.SKALD_SANDBOX_PIDS,
        uid,
      },
      this.sandboxOptions(spec.workspace, MCP_HOME, spec.network, MCP_HOME),
    );
    const entry: Running = { stop: () => launcher.kill(), done: launcher.exited };
    this.running.add(entry);
    void launcher.exited.then(() => {
      this.running.delete(entry);
      launcher.cgroup?.destroy();
    });
    if (launcher.error) throw launcher.error;
    launcher.start(input, spec.script);
    return { child: launcher.child, kill: () => launcher.kill(), exited: launcher.exited };
  }

  stopAll(): void {
    for (const r of this.running) r.stop();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopAll();
    await Promise.allSettled([...this.running].map((r) => r.done));
    process.removeListener('exit', this.onExit);
    await this.launchers?.dispose();
    await this.cgroups?.dispose();
    await this.disposeLayout?.();
  }

  private async start(): Promise<SandboxStatus> {
    const bwrap = await resolveExecutable(this.config.SKALD_SANDBOX_BWRAP);
    const network = this.config.SKALD_SANDBOX_NET === 'on';
    // resolv.conf only where some sandbox may have the network (commands, or MCP servers allowed it).
    const detected = await detectLayout({
      network: network || this.config.SKALD_MCP_NETWORK === 'on',
      extraRo: this.config.SKALD_SANDBOX_RO_BINDS,
    });
    this.layout = detected.layout;
    this.disposeLayout = () => detected.dispose();
    this.cgroups =
      this.config.SKALD_SANDBOX_CGROUPS === 'auto'
        ? await Cgroups.detect({
            pids: this.config.SKALD_SANDBOX_PIDS,
            memoryBytes: this.config.SKALD_SANDBOX_MEMORY,
            cpus: this.config.SKALD_SANDBOX_CPUS,
          })
        : Cgroups.none();
    const root = process.getuid?.() === 0;
    let setpriv: string | null = null;
    if (!this.cgroups.has('pids') && root && this.config.SKALD_SANDBOX_UID_COUNT > 0 && canSwitchUids()) {
      setpriv = await resolveExecutable('setpriv').catch(() => null);
      if (setpriv)
        this.tenantUids = new TenantUids(this.config.SKALD_SANDBOX_UID_BASE, this.config.SKALD_SANDBOX_UID_COUNT);
    }
    // RLIMIT_NPROC bounds each sandbox on its own unless its processes are root's outside (exempt).
    const nprocPerSandbox = !this.cgroups.has('pids') && (!root || this.tenantUids !== null);
    if (!this.cgroups.has('pids') && !nprocPerSandbox && this.config.SKALD_SANDBOX_UNBOUNDED !== 'allow')
      throw new Error(
        'no bound on the number of processes of a sandbox: no writable pids cgroup (v1, or v2 at the root of a writable cgroup namespace), ' +
          'and RLIMIT_NPROC cannot count per sandbox (the runner is root, whose processes it exempts, and cannot run sandboxes under tenant uids: it needs CAP_SETUID, CAP_SETGID, CAP_CHOWN, setpriv and SKALD_SANDBOX_UID_COUNT > 0); commands and ' +
          'stdio MCP servers are refused. Give the runner a writable cgroup, run it as root with those capabilities or as an unprivileged uid, or set SKALD_SANDBOX_UNBOUNDED=allow ' +
          'to run them with rlimits only (one fork bomb can then exhaust the node)',
      );
    this.seccompFile = this.config.SKALD_SANDBOX_SECCOMP === 'on' ? await seccompFilter() : null;
    this.launchers = new Launchers(bwrap, this.seccompFile, this.cgroups, setpriv);
    const startMs = await this.selfTest(this.launchers);
    const limits = [
      this.cgroups.has('pids')
        ? `${this.config.SKALD_SANDBOX_PIDS} processes (pids cgroup)`
        : nprocPerSandbox
          ? `${this.config.SKALD_SANDBOX_PIDS} processes per sandbox (RLIMIT_NPROC in its user namespace)`
          : 'processes NOT limited (no pids cgroup; the runner is root)',
      this.cgroups.has('memory')
        ? `${formatBytes(this.config.SKALD_SANDBOX_MEMORY)} memory (memory cgroup)`
        : `${formatBytes(this.config.SKALD_SANDBOX_MEMORY)} writable memory per process (RLIMIT_DATA; no memory cgroup)`,
      this.cgroups.has('cpu') ? `${this.config.SKALD_SANDBOX_CPUS} CPU (cpu cgroup)` : null,
      'CPU seconds = timeout (RLIMIT_CPU)',
      'file size ≤ the workspace quota left (RLIMIT_FSIZE)',
      `/tmp ${formatBytes(this.config.SKALD_SANDBOX_TMP_SIZE)}`,
    ].filter((x): x is string => x !== null);
    return {
      available: true,
      kind: 'bwrap',
      summary:
        `bubblewrap sandbox ready (${bwrap}; start-up self-test ${startMs.toFixed(1)} ms; ` +
        `network ${network ? 'ON (SKALD_SANDBOX_NET=on)' : 'off'}; ` +
        `syscall filter ${this.seccompFile ? basename(this.seccompFile) : 'OFF (SKALD_SANDBOX_SECCOMP=off)'}; ` +
        `limits (${this.modeName(nprocPerSandbox)}): ${limits.join(', ')})`,
    };
  }

  /** Which limits are in force, for `/readyz` and the log. */
  private modeName(nprocPerSandbox: boolean): string {
    if (this.cgroups && this.cgroups.version > 0) return `cgroup v${this.cgroups.version}`;
    if (!nprocPerSandbox) return 'rlimits only, no cgroup, processes unbounded (SKALD_SANDBOX_UNBOUNDED=allow)';
    if (this.tenantUids)
      return `rlimits per sandbox, no cgroup; sandboxes run as their tenant's uid (${this.tenantUids.base + 1}-${this.tenantUids.base + this.tenantUids.count - 1})`;
    return `rlimits per sandbox, no cgroup; sandboxes run as the runner's uid ${process.getuid?.() ?? '?'}`;
  }

  /** Runs `echo` in a throw-away workspace; returns the median start-to-exit time in ms. */
  private async selfTest(launchers: Launchers): Promise<number> {
    const dir = await mkdtemp(join(tmpdir(), 'skald-sandbox-selftest-'));
    if (this.tenantUids) await chown(dir, this.tenantUids.selfTestUid, this.tenantUids.selfTestUid);
    try {
      const times: number[] = [];
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        // Its workspace is a temporary directory (never a tenant's), run as the reserved uid.
        const outcome = await this.runIn(
          launchers,
          {
            command:
              'echo skald-sandbox-ok; test -w /workspace && test ! -e /etc/shadow' +
              // The filter is in force (seccomp mode 2 = filter).
              (this.seccompFile ? " && grep -q '^Seccomp:[[:space:]]*2' /proc/self/status" : ''),
            cwd: dir,
            virtualCwd: '/workspace',
            home: dir,
            timeoutSec: 20,
            signal: new AbortController().signal,
          },
          this.tenantUids?.selfTestUid,
        );
        times.push(performance.now() - started);
        if (outcome.kind !== 'exited' || outcome.exitCode !== 0 || !outcome.output.includes('skald-sandbox-ok')) {
          const detail = outcome.output.trim().split('\n').slice(-3).join(' / ') || outcome.kind;
          throw new Error(`the bubblewrap self-test failed: ${detail}`);
        }
      }
      return times.sort((a, b) => a - b)[1];
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** One command through a launcher of `launchers`; the call's cgroups are emptied afterwards. */
  private async runIn(launchers: Launchers, req: CommandRequest, asUid?: number): Promise<CommandOutcome> {
    if (req.command.includes('\0'))
      return { kind: 'exited', exitCode: 2, signal: null, output: 'sh: the command contains a NUL byte\n' };
    const uid = asUid ?? (await this.tenantUids?.uidFor(req.home));
    const launcher = await launchers.take();
    try {
      return await this.supervise(req, launcher, () => launchers.refill(), uid);
    } finally {
      launcher.cgroup?.destroy();
    }
  }

  /** The options of a sandbox with this runner's layout, network setting and filter. */
  sandboxOptions(workspace: string, cwd: string, network: boolean, home?: string): string[] {
    return bwrapOptions({
      home,
      layout: this.layout as SandboxLayout,
      workspace,
      cwd,
      network,
      tmpSizeBytes: this.config.SKALD_SANDBOX_TMP_SIZE,
      seccomp: this.seccompFile !== null,
    });
  }

  /**
   * Hands the call to its launcher (limits, command, bwrap's options on stdin) and follows it: output
   * captured and capped while read, SIGKILL on timeout, cancel or shutdown.
   */
  private supervise(
    req: CommandRequest,
    launcher: Launcher,
    started: () => void,
    uid: number | undefined,
  ): Promise<CommandOutcome> {
    const { child, cgroup } = launcher;
    const input = launcherInput(
      {
        cpuSeconds: req.timeoutSec,
        fileSizeBytes: req.maxFileBytes ?? DEFAULT_MAX_FILE,
        dataBytes: this.cgroups?.has('memory') ? undefined : this.config.SKALD_SANDBOX_MEMORY,
        processes: this.config.SKALD_SANDBOX_PIDS,
        uid,
      },
      this.sandboxOptions(req.home, req.virtualCwd, this.config.SKALD_SANDBOX_NET === 'on'),
    );
    let entry!: Running;
    const done = new Promise<CommandOutcome>((resolve) => {
      const capture = new OutputCapture(OUTPUT_MAX_BYTES);
      let ended: 'timed_out' | 'cancelled' | 'stopped' | null = null;
      const kill = (): void => {
        if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
        try {
          process.kill(child.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      };
      const end = (why: 'timed_out' | 'cancelled' | 'stopped'): void => {
        if (ended === null) ended = why;
        kill();
      };
      entry = { stop: () => end('stopped'), done: Promise.resolve() };
      this.running.add(entry);
      const timer = setTimeout(() => end('timed_out'), req.timeoutSec * 1000);
      const onAbort = (): void => end('cancelled');
      req.signal.addEventListener('abort', onAbort, { once: true });
      if (req.signal.aborted) end('cancelled');

      const stdout = child.stdout as NonNullable<ChildProcess['stdout']>;
      const stderr = child.stderr as NonNullable<ChildProcess['stderr']>;
      capture.follow(stdout, stderr, req.onOutput);

      let settled = false;
      const finish = (exitCode: number | null, signal: string | null): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.signal.removeEventListener('abort', onAbort);
        this.running.delete(entry);
        launcher.destroyPipes();
        const ooms = cgroup?.oomKills() ?? 0;
        // Whatever the sandbox's init left behind dies with the call.
        cgroup?.destroy();
        if (ooms > 0) {
          capture.push(
            Buffer.from(
              `\n[memory limit of ${formatBytes(this.config.SKALD_SANDBOX_MEMORY)} reached: the kernel killed ${ooms} process${ooms === 1 ? '' : 'es'} of this command]\n`,
            ),
          );
        }
        const output = capture.text();
        resolve(ended === null ? { kind: 'exited', exitCode, signal, output } : { kind: ended, output });
      };
      const failed = (e: Error): void => {
        capture.push(Buffer.from(`failed to start the sandbox: ${e.message}\n`));
        finish(127, null);
      };
      if (launcher.error) failed(launcher.error);
      else child.once('error', failed);
      void launcher.exited.then(({ code, signal }) => {
        let open = 2;
        const closed = (): void => {
          if (--open === 0) finish(code, signal);
        };
        for (const s of [stdout, stderr]) {
          if (s.readableEnded || s.destroyed) closed();
          else s.once('close', closed);
        }
        setTimeout(() => finish(code, signal), DRAIN_MS).unref();
      });
      if (ended === null) launcher.start(input, req.command);
      // The next call's launcher is spawned while this sandbox starts.
      started();
    });
    entry.done = done;
    return done;
  }
}

/** An executable by absolute path, or looked up on PATH; a clear error when missing. */
export async function resolveExecutable(name: string): Promise<string> {
  const candidates = isAbsolute(name)
    ? [name]
    : (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin')
        .split(delimiter)
        .filter((d) => d !== '')
        .map((d) => join(d, name));
  for (const c of candidates) {
    if (
      await access(c, FS.X_OK).then(
        () => true,
        () => false,
      )
    )
      return c;
  }
  throw new Error(
    `bubblewrap (${name}) is not installed or not executable; install the Debian package "bubblewrap", ` +
      'or set SKALD_SANDBOX=none to run commands without a sandbox (development only)',
  );
}
