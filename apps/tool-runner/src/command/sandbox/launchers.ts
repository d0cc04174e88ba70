import { ChildProcess, spawn } from 'node:child_process';
import { launcherArgs } from './bwrap-args';
import { CallCgroup, Cgroups } from './cgroups';

/** Launchers kept waiting for a call. */
const WARM = 2;

/** A launcher shell (`LAUNCHER_SCRIPT`) in its call's cgroups, waiting on stdin for its call. */
export class Launcher {
  private failure: Error | null = null;
  /** Resolves when the launcher (later bwrap) exits, however early. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(
    readonly child: ChildProcess,
    readonly cgroup: CallCgroup | null,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.once('error', (e) => {
      this.failure = e;
    });
    // A launcher that died before its call makes the write fail (EPIPE): its exit says what happened.
    child.stdin?.on('error', () => undefined);
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
    private readonly cgroups: Cgroups,
  ) {}

  /** A launcher for one call: a waiting one, or one spawned now (with the command when it is given). */
  async take(command?: string): Promise<Launcher> {
    if (command === undefined) {
      for (let l = this.ready.shift(); l; l = this.ready.shift()) {
        if (l.waiting) return l;
        void this.discard(l);
      }
    }
    return this.spawn(command);
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

  private async spawn(command?: string): Promise<Launcher> {
    const cgroup = this.cgroups.controllers.length > 0 ? await this.cgroups.create() : null;
    // Nothing of the service's environment: bwrap itself (pid 1 inside) keeps this one.
    const child = spawn('/bin/sh', launcherArgs(this.bwrap, cgroup?.procsFiles ?? [], command), {
      cwd: '/',
      env: { PATH: '/usr/bin:/bin' },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    return new Launcher(child, cgroup);
  }

  private async discard(l: Launcher): Promise<void> {
    l.kill();
    l.child.stdin?.destroy();
    l.child.stdout?.destroy();
    l.child.stderr?.destroy();
    if (l.child.pid !== undefined) await l.exited;
    l.cgroup?.destroy();
  }
}
