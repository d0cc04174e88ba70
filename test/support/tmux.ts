import { execFileSync } from 'node:child_process';

/** How often a wait reads the screen, and how long it waits at most by default. */
const POLL_MS = 150;
const WAIT_MS = 30_000;

/**
 * A program in a real terminal: a tmux server of its own (its own socket), one session of a fixed
 * size. Keys go in with send-keys, the screen comes out with capture-pane.
 */
export class Terminal {
  private readonly socket = `skald-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  private started = false;

  constructor(
    readonly width = 120,
    readonly height = 40,
  ) {}

  private tmux(...args: string[]): string {
    return execFileSync('tmux', ['-L', this.socket, ...args], {
      encoding: 'utf8',
      env: { ...process.env, TERM: 'xterm-256color' },
    });
  }

  /** Starts `command` (a shell line) in a new window named `name`. */
  start(name: string, command: string): void {
    if (!this.started) {
      this.tmux(
        'new-session',
        '-d',
        '-s',
        'main',
        '-n',
        name,
        '-x',
        String(this.width),
        '-y',
        String(this.height),
        command,
      );
      this.tmux('set-option', '-g', 'remain-on-exit', 'on');
      this.started = true;
    } else this.tmux('new-window', '-t', 'main', '-n', name, command);
  }

  /** Keys by tmux name (`Enter`, `C-c`, `Tab`). */
  keys(name: string, ...keys: string[]): void {
    this.tmux('send-keys', '-t', `main:${name}`, ...keys);
  }

  /** Text typed as it is (after `--`: text starting with `-` is not read as a flag). */
  type(name: string, text: string): void {
    this.tmux('send-keys', '-t', `main:${name}`, '-l', '--', text);
  }

  screen(name: string): string {
    return this.tmux('capture-pane', '-p', '-J', '-t', `main:${name}`, '-S', '-200');
  }

  /** Waits until the screen matches (at most `ms`), answering it; else fails showing the screen. */
  async waitFor(name: string, what: RegExp, ms = WAIT_MS): Promise<string> {
    const until = Date.now() + ms;
    let last = '';
    while (Date.now() < until) {
      last = this.screen(name);
      if (what.test(last)) return last;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    throw new Error(`the terminal did not show ${what} within ${ms} ms; it shows:\n${last}`);
  }

  stop(): void {
    if (!this.started) return;
    try {
      this.tmux('kill-server');
    } catch {
      // already gone
    }
    this.started = false;
  }
}
