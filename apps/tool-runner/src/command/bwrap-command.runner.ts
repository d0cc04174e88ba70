import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { access, constants as FS, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, isAbsolute, join } from 'node:path';
import { LOGGER, TOOL_RUNNER_CONFIG, ToolRunnerConfig } from '../config';
import { formatBytes } from '../workspace/workspaces.service';
import { Logger } from '@skald/service-kit';
import { CommandOutcome, CommandRequest, CommandRunner, SandboxStatus } from './command-runner';
import { OutputCapture } from './output-capture';
import { OUTPUT_MAX_BYTES } from './plain-command.runner';
import { bwrapArgs, launcherArgs, SandboxLayout } from './sandbox/bwrap-args';
import { CallCgroup, Cgroups } from './sandbox/cgroups';
import { detectLayout } from './sandbox/sandbox-layout';

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
>;

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
 */
@Injectable()
export class BwrapCommandRunner extends CommandRunner implements OnApplicationShutdown {
  private status?: Promise<SandboxStatus>;
  private layout?: SandboxLayout;
  private disposeLayout?: () => Promise<void>;
  private cgroups?: Cgroups;
  private bwrapPath = '';
  private readonly running = new Set<Running>();
  private readonly onExit = (): void => {
    for (const r of this.running) r.stop();
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
    if (!status.available || !this.layout || !this.cgroups) throw new Error(status.summary);
    const cgroup = this.cgroups.controllers.length > 0 ? await this.cgroups.acquire() : null;
    try {
      return await this.supervise(req, cgroup);
    } finally {
      await cgroup?.destroy();
    }
  }

  stopAll(): void {
    for (const r of this.running) r.stop();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopAll();
    await Promise.allSettled([...this.running].map((r) => r.done));
    process.removeListener('exit', this.onExit);
    await this.cgroups?.dispose();
    await this.disposeLayout?.();
  }

  private async start(): Promise<SandboxStatus> {
    this.bwrapPath = await resolveExecutable(this.config.SKALD_SANDBOX_BWRAP);
    const network = this.config.SKALD_SANDBOX_NET === 'on';
    const detected = await detectLayout({ network, extraRo: this.config.SKALD_SANDBOX_RO_BINDS });
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
    const startMs = await this.selfTest();
    const limits = [
      this.cgroups.has('pids')
        ? `${this.config.SKALD_SANDBOX_PIDS} processes (pids cgroup)`
        : 'processes NOT limited (no pids cgroup)',
      this.cgroups.has('memory')
        ? `${formatBytes(this.config.SKALD_SANDBOX_MEMORY)} memory (memory cgroup)`
        : `${formatBytes(this.config.SKALD_SANDBOX_MEMORY)} address space per process (RLIMIT_AS; no memory cgroup)`,
      this.cgroups.has('cpu') ? `${this.config.SKALD_SANDBOX_CPUS} CPU (cpu cgroup)` : null,
      'CPU seconds = timeout (RLIMIT_CPU)',
      'file size ≤ the workspace quota left (RLIMIT_FSIZE)',
      `/tmp ${formatBytes(this.config.SKALD_SANDBOX_TMP_SIZE)}`,
    ].filter((x): x is string => x !== null);
    return {
      available: true,
      kind: 'bwrap',
      summary:
        `bubblewrap sandbox ready (${this.bwrapPath}; start-up self-test ${startMs.toFixed(1)} ms; ` +
        `network ${network ? 'ON (SKALD_SANDBOX_NET=on)' : 'off'}; limits: ${limits.join(', ')})`,
    };
  }

  /** Runs `echo` in a throw-away workspace; returns the median start-to-exit time in ms. */
  private async selfTest(): Promise<number> {
    const dir = await mkdtemp(join(tmpdir(), 'skald-sandbox-selftest-'));
    const cgroups = this.cgroups as Cgroups;
    try {
      const times: number[] = [];
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        const cgroup = cgroups.controllers.length > 0 ? await cgroups.create(randomUUID()) : null;
        let outcome: CommandOutcome;
        try {
          outcome = await this.supervise(
            {
              command: 'echo skald-sandbox-ok; test -w /workspace && test ! -e /etc/shadow',
              cwd: dir,
              virtualCwd: '/workspace',
              home: dir,
              timeoutSec: 20,
              signal: new AbortController().signal,
            },
            cgroup,
          );
        } finally {
          await cgroup?.destroy();
        }
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

  private supervise(req: CommandRequest, cgroup: CallCgroup | null): Promise<CommandOutcome> {
    const layout = this.layout as SandboxLayout;
    const haveMemoryCgroup = this.cgroups?.has('memory') ?? false;
    const argv = launcherArgs(
      this.bwrapPath,
      bwrapArgs({
        layout,
        workspace: req.home,
        cwd: req.virtualCwd,
        network: this.config.SKALD_SANDBOX_NET === 'on',
        tmpSizeBytes: this.config.SKALD_SANDBOX_TMP_SIZE,
        command: req.command,
      }),
      cgroup?.procsFiles ?? [],
      {
        cpuSeconds: req.timeoutSec,
        fileSizeBytes: req.maxFileBytes ?? DEFAULT_MAX_FILE,
        addressSpaceBytes: haveMemoryCgroup ? undefined : this.config.SKALD_SANDBOX_MEMORY,
      },
    );
    let entry!: Running;
    const done = new Promise<CommandOutcome>((resolve) => {
      const capture = new OutputCapture(OUTPUT_MAX_BYTES);
      // Nothing of the service's environment: bwrap itself (pid 1 inside) keeps this one.
      const child: ChildProcess = spawn('/bin/sh', argv, {
        cwd: '/',
        env: { PATH: '/usr/bin:/bin' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
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
        stdout.destroy();
        stderr.destroy();
        void (async () => {
          const ooms = (await cgroup?.oomKills()) ?? 0;
          if (ooms > 0) {
            capture.push(
              Buffer.from(
                `\n[memory limit of ${formatBytes(this.config.SKALD_SANDBOX_MEMORY)} reached: the kernel killed ${ooms} process${ooms === 1 ? '' : 'es'} of this command]\n`,
              ),
            );
          }
          const output = capture.text();
          resolve(ended === null ? { kind: 'exited', exitCode, signal, output } : { kind: ended, output });
        })();
      };
      child.once('error', (e) => {
        capture.push(Buffer.from(`failed to start the sandbox: ${e.message}\n`));
        finish(127, null);
      });
      child.once('exit', (code, signal) => {
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
