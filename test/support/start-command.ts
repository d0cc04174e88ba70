import { ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { until } from './until';

const ROOT = path.resolve(__dirname, '../..');

export interface StartedCommand {
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  out: () => string;
}

/**
 * Starts `npm start` (`node scripts/dev.js`) in a process group of its own, as a terminal runs it, so that `ctrlC`
 * reaches the whole group; resolves once its banner is printed (fails with its output if it exits first).
 * `checkout` runs it from another path to this repository (a symbolic link), keeping that path as its own.
 */
export async function startCommand(
  env: NodeJS.ProcessEnv,
  { checkout, timeoutMs = 120_000 }: { checkout?: string; timeoutMs?: number } = {},
): Promise<StartedCommand> {
  const args = checkout
    ? ['--preserve-symlinks', '--preserve-symlinks-main', path.join(checkout, 'scripts/dev.js')]
    : ['scripts/dev.js'];
  const child = spawn(process.execPath, args, {
    cwd: checkout ?? ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  try {
    await until(
      'the banner of npm start',
      async () => {
        if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}:\n${out}`);
        return out.includes('Skald is running');
      },
      timeoutMs,
    );
  } catch (e) {
    // Never left running: Ctrl-C, and SIGKILL to the group if it has not stopped within 30 s.
    const timer = setTimeout(() => child.exitCode === null && process.kill(-child.pid!, 'SIGKILL'), 30_000);
    await ctrlC(child);
    clearTimeout(timer);
    throw e;
  }
  return { child, out: () => out };
}

/** Ctrl-C as a terminal sends it: SIGINT to the whole process group. Resolves with the exit code. */
export async function ctrlC(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  process.kill(-child.pid!, 'SIGINT');
  return exited;
}

/** A request to the gateway on `port`: GET, or POST of `body` as JSON; with `token` as bearer. */
export const gatewayApi =
  (port: number) =>
  (p: string, token?: string, body?: unknown): Promise<Response> =>
    fetch(`http://127.0.0.1:${port}${p}`, {
      method: body ? 'POST' : 'GET',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
