import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { spawn } from 'node:child_process';
import { CommandOutcome, CommandRequest, CommandRunner, SandboxStatus } from './command-runner';
import { OutputCapture } from './output-capture';

export const OUTPUT_MAX_BYTES = 100 * 1024;
/** After the shell exits, how long to wait for the pipes to drain before closing them. */
const DRAIN_MS = 200;

/**
 * `SKALD_SANDBOX=none`: runs `sh -c <command>` directly on the host, in the workspace directory, in
 * a process group of its own that is killed (SIGKILL) on timeout, on cancel, on shutdown, and once
 * the shell has exited (so background children do not outlive the call). NO isolation: a command
 * can read and write anything the service user can, and `setsid` children escape the group kill.
 * Development only. `BwrapCommandRunner` is the sandbox (pid namespace: killing the sandbox's
 * init takes every descendant with it).
 */
@Injectable()
export class PlainCommandRunner extends CommandRunner implements OnApplicationShutdown {
  private readonly groups = new Map<number, (reason: 'stopped') => void>();
  private readonly onExit = (): void => this.killGroups();

  constructor() {
    super();
    process.once('exit', this.onExit);
  }

  init(): Promise<SandboxStatus> {
    return Promise.resolve({
      available: true,
      kind: 'none',
      summary: 'SKALD_SANDBOX=none: execute_cmd runs commands WITHOUT ANY SANDBOX on this host (development only)',
    });
  }

  run(req: CommandRequest): Promise<CommandOutcome> {
    return new Promise<CommandOutcome>((resolve) => {
      const capture = new OutputCapture(OUTPUT_MAX_BYTES);
      const child = spawn('/bin/sh', ['-c', req.command], {
        cwd: req.cwd,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        // Never the service's environment: it holds credentials.
        env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: req.home, LANG: 'C.UTF-8', TERM: 'dumb', PWD: req.cwd },
      });
      let ended: 'timed_out' | 'cancelled' | 'stopped' | null = null;
      const pid = child.pid;
      const kill = (): void => {
        if (pid !== undefined) {
          try {
            process.kill(-pid, 'SIGKILL');
          } catch {
            /* already gone */
          }
        }
      };
      const end = (why: 'timed_out' | 'cancelled' | 'stopped'): void => {
        if (ended === null) ended = why;
        kill();
      };
      const timer = setTimeout(() => end('timed_out'), req.timeoutSec * 1000);
      const onAbort = (): void => end('cancelled');
      req.signal.addEventListener('abort', onAbort, { once: true });
      if (req.signal.aborted) end('cancelled');
      if (pid !== undefined) this.groups.set(pid, () => end('stopped'));

      capture.follow(child.stdout, child.stderr, req.onOutput);

      let settled = false;
      const finish = (exitCode: number | null, signal: string | null): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.signal.removeEventListener('abort', onAbort);
        kill();
        if (pid !== undefined) this.groups.delete(pid);
        // Background children that escaped the group may hold the pipes open: do not wait for them.
        setTimeout(
          () => {
            child.stdout.destroy();
            child.stderr.destroy();
            const output = capture.text();
            resolve(ended === null ? { kind: 'exited', exitCode, signal, output } : { kind: ended, output });
          },
          child.stdout.readableEnded && child.stderr.readableEnded ? 0 : DRAIN_MS,
        );
      };
      child.once('error', (e) => {
        capture.push(Buffer.from(`failed to start the shell: ${e.message}\n`));
        finish(127, null);
      });
      child.once('exit', (code, signal) => {
        let open = 2;
        const done = (): void => {
          if (--open === 0) finish(code, signal);
        };
        for (const s of [child.stdout, child.stderr]) {
          if (s.readableEnded || s.destroyed) done();
          else s.once('close', done);
        }
        // Pipes held by an escaped child: finish anyway after the drain window.
        setTimeout(() => finish(code, signal), DRAIN_MS).unref();
      });
    });
  }

  stopAll(): void {
    for (const stop of [...this.groups.values()]) stop('stopped');
  }

  onApplicationShutdown(): void {
    this.stopAll();
    process.removeListener('exit', this.onExit);
  }

  private killGroups(): void {
    for (const pid of this.groups.keys()) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
}
