import { ChildProcess, spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { ARGS_FD, LAUNCH_FD, launcherArgs } from './bwrap-args';
import { CallCgroup, Cgroups } from './cgroups';

/** Launchers kept waiting for a call. */
const WARM = 2;

/** The whole environment of every host-side process of the sandbox (launcher, bwrap): a constant. */
export const HOST_ENV: Readonly<Record<string, string>> = Object.freeze({ PATH: '/usr/bin:/bin' });

/** A launcher shell (`LAUNCHER_SCRIPT`) in its call's cgroups, waiting on fd 3 for its call. */
export class Launcher {
  private failure: Error | null = null;
  /** Resolves when the launcher (later bwrap) exits, however early. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(
    readonly child: ChildProcess,
    readonly cgroup: CallCgroup | null,
  ) {
    // A launcher that could not be spawned emits 'error' and never 'exit': it has exited all the same.
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      child.once('error', () => resolve({ code: null, signal: null }));
    });
    child.once('error', (e) => {
      this.failure = e;
    });
    // A launcher that died before its call makes the write fail (EPIPE): its exit says what happened.
    for (const s of [child.stdin, this.control, this.script]) s?.on('error', () => undefined);
  }

  /** fd 3: the limits line and bwrap's options. */
  get control(): Writable | null {
    return (this.child.stdio[ARGS_FD] as Writable | null | undefined) ?? null;
  }

  /** fd 4: the launch script. */
  get script(): Writable | null {
    return (this.child.stdio[LAUNCH_FD] as Writable | null | undefined) ?? null;
  }

  /** Hands the launcher its call: `input` on fd 3 (`launcherInput`), the launch script on fd 4. */
  start(input: Buffer, script: string): void {
    this.control?.end(input);
    this.script?.end(script);
  }

  /** Closes every pipe of the runner's side. */
  destroyPipes(): void {
    for (const s of this.child.stdio) s?.destroy();
  }

  /** Why it could not be spawned, if it could not. */
  get error(): Error | null {
    return this.failure;
  }

  /** Still waiting for its call. */
  get waiting(): boolean {
    return (
      this.failure === null &&
      this.child.pid !== undefined &&
      this.child.exitCode === null &&
      this.child.signalCode === null
    );
  }

  kill(): void {
    if (!this.waiting) return;
    try {
      process.kill(this.child.pid as number, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

/**
 * Launchers spawned ahead of their calls. Spawning one costs the service a fork of itself (a few
 * ms, during which its event loop stands still), the shell's start and the moves into the call's
 * cgroups; a call takes a waiting one and a new one is spawned while the call's sandbox starts.
 * Calls beyond the waiting ones (or a long command, which travels as an argument) spawn their own.
 */
export class Launchers {
  private readonly ready: Launcher[] = [];
  private filling: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly bwrap: string,
    private readonly seccompFile: string | null,
    private readonly cgroups: Cgroups,
    /** setpriv, when calls may name a tenant uid to run bwrap as. */
    private readonly setpriv: string | null = null,
  ) {}

  /** A launcher for one command: a waiting one, or one spawned now. */
  async take(): Promise<Launcher> {
    for (let l = this.ready.shift(); l; l = this.ready.shift()) {
      if (l.waiting) return l;
      void this.discard(l);
    }
    return this.spawn();
  }

  /** A launcher for a long-lived program that talks on its stdin (a stdio MCP server), in cgroups of its own. */
  async spawnInteractive(): Promise<Launcher> {
    return this.spawn('pipe');
  }

  /** Spawns launchers in the background until `WARM` are waiting (call once a call has started). */
  refill(): void {
    if (this.filling || this.closed || this.ready.length >= WARM) return;
    this.filling = (async () => {
      while (!this.closed && this.ready.length < WARM) this.ready.push(await this.spawn());
    })()
      .catch(() => undefined)
      .finally(() => {
        this.filling = null;
      });
  }

  /** Kills the waiting launchers synchronously (the process is exiting). */
  killWaiting(): void {
    for (const l of this.ready) l.kill();
  }

  async dispose(): Promise<void> {
    this.closed = true;
    await this.filling;
    await Promise.all(this.ready.splice(0).map((l) => this.discard(l)));
  }

  private async spawn(stdin: 'ignore' | 'pipe' = 'ignore'): Promise<Launcher> {
    const cgroup = this.cgroups.controllers.length > 0 ? await this.cgroups.create() : null;
    // Nothing of the service's environment nor of the call: bwrap itself (pid 1 inside) keeps this one.
    const child = spawn('/bin/sh', launcherArgs(this.bwrap, this.seccompFile, cgroup?.procsFiles ?? [], this.setpriv), {
      cwd: '/',
      env: HOST_ENV,
      stdio: [stdin, 'pipe', 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    return new Launcher(child, cgroup);
  }

  private async discard(l: Launcher): Promise<void> {
    l.kill();
    l.destroyPipes();
    if (l.child.pid !== undefined) await l.exited;
    l.cgroup?.destroy();
  }
}
