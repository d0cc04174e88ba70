import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { natsAuthorizationBlock, SKALD_SERVICES, SkaldService } from '@skald/contracts';
import { freePort } from './free-port';
import { stopProcess } from './process';

const PG_BIN = process.env.SKALD_PG_BIN ?? '/usr/lib/postgresql/15/bin';

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} not ready after ${timeoutMs} ms`);
}

function asPostgres(args: string[]): string[] {
  // Postgres refuses to run as root: run its binaries as the postgres user when we are root.
  return process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', ...args] : args;
}

function run(args: string[]): string {
  const [cmd, ...rest] = asPostgres(args);
  return execFileSync(cmd, rest, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * A throwaway PostgreSQL server on a spare loopback port, for fault tests that restart or stop
 * it without touching the machine's shared server.
 */
export interface PrivatePostgresOptions {
  /** Extra server settings (`-c name=value`), e.g. `shared_preload_libraries`. */
  settings?: Record<string, string>;
}

export class PrivatePostgres {
  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly settings: Record<string, string> = {},
  ) {}

  static async start(options: PrivatePostgresOptions = {}): Promise<PrivatePostgres> {
    const port = await freePort();
    const dir = mkdtempSync(path.join(tmpdir(), 'skald-pg-'));
    chmodSync(dir, 0o700);
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(dir, uid, gid);
    }
    run([`${PG_BIN}/initdb`, '-D', `${dir}/data`, '-U', 'postgres', '-A', 'trust', '--no-sync']);
    const pg = new PrivatePostgres(port, dir, options.settings);
    pg.start();
    await pg.ready();
    return pg;
  }

  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  private start(): void {
    run([
      `${PG_BIN}/pg_ctl`,
      '-D',
      `${this.dir}/data`,
      '-l',
      `${this.dir}/log`,
      '-w',
      '-o',
      [
        `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`,
        ...Object.entries(this.settings).map(([k, v]) => `-c ${k}=${v}`),
      ].join(' '),
      'start',
    ]);
  }

  private async ready(): Promise<void> {
    await waitFor(() => {
      try {
        run([`${PG_BIN}/pg_isready`, '-h', '127.0.0.1', '-p', String(this.port)]);
        return true;
      } catch {
        return false;
      }
    }, 'private postgres');
  }

  /** The server's main process (its backends are its children), or null when it is not running. */
  postmasterPid(): number | null {
    try {
      return Number(readFileSync(path.join(this.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]) || null;
    } catch {
      return null;
    }
  }

  /** Stops it (fast: every connection is terminated), then starts it again after `downMs`. */
  async restart(downMs = 0): Promise<void> {
    await this.stop();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    this.start();
    await this.ready();
  }

  async stop(): Promise<void> {
    try {
      run([`${PG_BIN}/pg_ctl`, '-D', `${this.dir}/data`, '-m', 'fast', '-w', 'stop']);
    } catch {
      /* already stopped */
    }
    return Promise.resolve();
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Options of a private NATS server. */
export interface PrivateNatsOptions {
  /**
   * One NATS user per service with the permissions of `@skald/contracts` (access.ts), plus an
   * all-powerful `skald-test` user for the test's own clients; anonymous connections are refused.
   */
  serviceUsers?: boolean;
}

/** A throwaway plain NATS server (no JetStream, as in production) on a spare loopback port, killable and restartable on the same port. */
export class PrivateNats {
  private child: ChildProcess | null = null;
  /** Passwords of the service users (when started with `serviceUsers`). */
  private readonly passwords = new Map<SkaldService, string>();
  /** Credentials of the test's own all-powerful user, or null when the server takes anonymous clients. */
  readonly testUser: { user: string; pass: string } | null;

  private constructor(
    readonly port: number,
    private readonly dir: string,
    options: PrivateNatsOptions,
  ) {
    this.testUser = options.serviceUsers ? { user: 'skald-test', pass: randomBytes(18).toString('base64url') } : null;
    if (options.serviceUsers)
      for (const s of SKALD_SERVICES) this.passwords.set(s, randomBytes(18).toString('base64url'));
  }

  static async start(options: PrivateNatsOptions = {}): Promise<PrivateNats> {
    const nats = new PrivateNats(await freePort(), mkdtempSync(path.join(tmpdir(), 'skald-nats-')), options);
    nats.writeConfig();
    await nats.start();
    return nats;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** The server's process id, or null when it is not running. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** `NATS_USER` / `NATS_PASSWORD` for a service (empty when the server has no users). */
  serviceEnv(service: SkaldService): Record<string, string> {
    const password = this.passwords.get(service);
    return password ? { NATS_USER: service, NATS_PASSWORD: password } : {};
  }

  private get configFile(): string {
    return path.join(this.dir, 'nats.conf');
  }

  private writeConfig(): void {
    const lines = [`listen: "127.0.0.1:${this.port}"`];
    if (this.testUser)
      lines.push(
        natsAuthorizationBlock(
          (s) => this.passwords.get(s) ?? '',
          [{ user: this.testUser.user, password: this.testUser.pass }],
        ),
      );
    writeFileSync(this.configFile, lines.join('\n') + '\n', { mode: 0o600 });
  }

  async start(): Promise<void> {
    this.child = spawn(process.env.SKALD_NATS_BIN ?? '/usr/sbin/nats-server', ['-c', this.configFile], {
      stdio: 'ignore',
      env: natsServerEnv(),
    });
    await waitForPort(this.port, 'private nats');
  }

  /** kill -9, as a crash would. */
  async kill(): Promise<void> {
    if (this.child) await stopProcess(this.child, 'SIGKILL', 1000);
    this.child = null;
  }

  async destroy(): Promise<void> {
    if (this.child) await stopProcess(this.child, 'SIGTERM', 5000);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The NATS server's environment: the Go runtime runs its goroutines on one OS thread
 * (`GOMAXPROCS`, from `SKALD_NATS_GOMAXPROCS`, default 1) unless told otherwise. On a machine whose
 * few cores every process of the stack shares, the server's default (one thread per core, idle ones
 * spinning for work before they sleep) spent a third of its CPU handing each message between threads
 * (futex and nanosleep were half of its system calls): docs/performance.md, "NATS on one thread".
 */
export function natsServerEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...env, GOMAXPROCS: env.SKALD_NATS_GOMAXPROCS ?? env.GOMAXPROCS ?? '1' };
}

/** Until something accepts TCP connections on the loopback port. */
async function waitForPort(port: number, what: string): Promise<void> {
  const net = await import('node:net');
  await waitFor(
    () =>
      new Promise<boolean>((resolve) => {
        const s = net.connect({ host: '127.0.0.1', port });
        s.once('connect', () => {
          s.destroy();
          resolve(true);
        });
        s.once('error', () => resolve(false));
      }),
    what,
  );
}

/** A throwaway Redis server (no persistence) on a spare loopback port, killable and restartable on the same port. */
export class PrivateRedis {
  private child: ChildProcess | null = null;

  private constructor(readonly port: number) {}

  static async start(): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort());
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** The server's process id, or null when it is not running. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  async start(): Promise<void> {
    this.child = spawn(
      process.env.SKALD_REDIS_BIN ?? '/usr/bin/redis-server',
      ['--bind', '127.0.0.1', '--port', String(this.port), '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    await waitForPort(this.port, 'private redis');
  }

  /** kill -9, as a crash would (its data is gone: it keeps none). */
  async kill(): Promise<void> {
    if (this.child) await stopProcess(this.child, 'SIGKILL', 1000);
    this.child = null;
  }

  async destroy(): Promise<void> {
    if (this.child) await stopProcess(this.child, 'SIGTERM', 5000);
    this.child = null;
  }
}
