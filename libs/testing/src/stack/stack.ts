import { ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { provisionServiceRoles, serviceDatabaseUrl } from '@skald/persistence';
import { freePort } from './free-port';
import { REDIS_SERVICES, redisAclRules } from '@skald/contracts';
import Redis from 'ioredis';
import { PrivateNats } from './private-services';
import { stopProcess } from './process';

export { stopProcess } from './process';

const SCRIPTS = {
  'approval-service': 'apps/approval-service/dist/main.js',
  'tool-runner': 'apps/tool-runner/dist/main.js',
  'session-worker': 'apps/session-worker/dist/main.js',
  scheduler: 'apps/scheduler/dist/main.js',
  gateway: 'apps/gateway/dist/main.js',
} as const;

export type AppName = 'gateway' | 'session-worker' | 'approval-service' | 'tool-runner' | 'scheduler' | 'llm-sim';

export interface StackProcess {
  name: AppName;
  instance: string;
  port: number;
  url: string;
  child: ChildProcess;
  logs: string[];
}

/** The default bound on one process's start (`StackOptions.readyTimeoutMs`). */
export const READY_TIMEOUT_MS = 120_000;

export interface StackOptions {
  /** Repository root (where apps/ and libs/ live). */
  root: string;
  /** How many replicas of each app (default 1 each). */
  replicas?: Partial<Record<Exclude<AppName, 'llm-sim'>, number>>;
  /** Extra environment for every app. */
  env?: Record<string, string>;
  /** Extra environment for one app only. */
  perApp?: Partial<Record<Exclude<AppName, 'llm-sim'>, Record<string, string>>>;
  /** Admin account bootstrapped by the gateway. */
  admin?: { email: string; password: string };
  /**
   * A NATS server the test started (to kill it); default: one of the stack's own. Either way its
   * service users are used when it has them (`PrivateNats.start({ serviceUsers: true })`).
   */
  nats?: PrivateNats;
  /** Node options for one app's processes (e.g. `--cpu-prof`, which NODE_OPTIONS does not take). */
  nodeArgs?: Partial<Record<AppName, string[]>>;
  /**
   * How long each process gets to answer its readiness probe (default `READY_TIMEOUT_MS`): a
   * process that starts answers at once; the bound only decides how long a broken start takes to
   * fail, and on a loaded 2-core machine a healthy start has taken over 60 s.
   */
  readyTimeoutMs?: number;
  /** LLM clients (`SKALD_LLM_CLIENTS`) built from the llm-sim base URL; default: one client `default` on the sim. */
  llmClients?: (simUrl: string) => unknown[];
}

/**
 * The five apps and llm-sim as separate OS processes on free loopback ports, against the real
 * Postgres / Redis / NATS named by DATABASE_URL, NATS_URL, REDIS_URL. Each process's output is
 * kept for assertions and failure messages.
 */
export class Stack {
  readonly processes: StackProcess[] = [];
  readonly admin: { email: string; password: string };
  readonly env: Record<string, string>;
  simUrl = '';
  /** The NATS server the apps use, unless the test named one by `env.NATS_URL`. */
  nats: PrivateNats | null = null;
  private ownsNats = false;
  private readonly redisUserPrefix = `skald-test-${randomBytes(4).toString('hex')}-`;
  private readonly redisEnv: Partial<Record<AppName, Record<string, string>>> = {};

  private constructor(private readonly options: StackOptions) {
    this.admin = options.admin ?? {
      email: `admin-${randomBytes(4).toString('hex')}@skald.test`,
      password: randomBytes(12).toString('base64url'),
    };
    this.env = {
      DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald_test',
      NATS_URL: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      DATABASE_POOL_SIZE: '3',
      LOG_LEVEL: 'info',
      SKALD_JWT_SECRET: randomBytes(48).toString('base64url'),
      SKALD_SECRETS_KEY: randomBytes(32).toString('base64'),
      SKALD_VAPID_PRIVATE_KEY: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' })
        .d as string,
      SKALD_ADMIN_EMAIL: this.admin.email,
      SKALD_ADMIN_PASSWORD: this.admin.password,
      SKALD_WORKSPACES: mkdtempSync(path.join(tmpdir(), 'skald-ws-')),
      SKALD_SHUTDOWN_GRACE_MS: '5000',
      // Stacks share the Redis server: each keeps its LLM health apart.
      SKALD_LLM_HEALTH_PREFIX: `skald-test-${randomBytes(6).toString('hex')}:llm:health:`,
      // ... and their BullMQ queues (a scheduler of another stack would take this stack's fires).
      SKALD_BULL_PREFIX: `skald-test-${randomBytes(6).toString('hex')}`,
      // ... and their login-throttling counters.
      SKALD_LOGIN_LIMIT_PREFIX: `skald-test-${randomBytes(6).toString('hex')}:login:`,
      // The tests read every app's /metrics from loopback without a token (service-kit's guard, on all
      // five apps; the production manifests leave it off and Prometheus sends SKALD_METRICS_TOKEN).
      SKALD_METRICS_TRUST_LOOPBACK: 'on',
      // A background title request would take a reply scripted for a test's turn; the tests of
      // conversation titles turn them on.
      SKALD_TITLES: 'off',
      // Tests edit approval rules in SQL (as an operator may); the service sees such an edit within
      // this bound (5 s in production, where edits go through the API and its doorbell).
      SKALD_RULES_MAX_AGE_MS: '200',
      ...options.env,
    };
  }

  static async start(options: StackOptions): Promise<Stack> {
    const stack = new Stack(options);
    try {
      // A NATS server of its own unless the test names one: queue groups of two stacks on one
      // server would answer each other's requests. Each app logs in as its own NATS user, with
      // only the subjects contracts/access.ts grants it, as in production.
      if (options.nats) stack.nats = options.nats;
      else if (!options.env?.NATS_URL) {
        stack.nats = await PrivateNats.start({ serviceUsers: true });
        stack.ownsNats = true;
      }
      if (stack.nats) stack.env.NATS_URL = stack.nats.url;
      if (!options.env?.REDIS_URL) await stack.createRedisUsers();
      await stack.boot();
    } catch (e) {
      await stack.stop();
      throw e;
    }
    return stack;
  }

  /**
   * The apps that use Redis (the gateway, the session worker, the scheduler) log in to it as users
   * of their own that reach only their keys (contracts/access.ts), as in production; per-stack
   * names, so that stacks sharing the Redis server never collide. The other apps get no Redis
   * credentials.
   */
  private async createRedisUsers(): Promise<void> {
    const admin = new Redis(this.env.REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      const prefixes = {
        bullPrefix: this.env.SKALD_BULL_PREFIX,
        llmHealthPrefix: this.env.SKALD_LLM_HEALTH_PREFIX,
        loginLimitPrefix: this.env.SKALD_LOGIN_LIMIT_PREFIX,
      };
      for (const service of REDIS_SERVICES) {
        const user = `${this.redisUserPrefix}${service}`;
        const password = randomBytes(18).toString('base64url');
        await admin.call('ACL', 'SETUSER', user, 'reset', ...redisAclRules(service, password, prefixes));
        const url = new URL(this.env.REDIS_URL);
        url.username = user;
        url.password = password;
        this.redisEnv[service] = { REDIS_URL: url.toString() };
      }
    } finally {
      admin.disconnect();
    }
  }

  private async dropRedisUsers(): Promise<void> {
    if (Object.keys(this.redisEnv).length === 0) return;
    const admin = new Redis(this.env.REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await admin.call('ACL', 'DELUSER', ...REDIS_SERVICES.map((s) => `${this.redisUserPrefix}${s}`));
    } catch {
      /* the server is gone: so are its users */
    } finally {
      admin.disconnect();
    }
  }

  /** Connection options for the test's own NATS client (all subjects). */
  get natsClient(): { servers: string; user?: string; pass?: string } {
    return { servers: this.env.NATS_URL, ...(this.nats?.testUser ?? {}) };
  }

  get gatewayUrl(): string {
    return this.byName('gateway')[0].url;
  }

  byName(name: AppName): StackProcess[] {
    return this.processes.filter((p) => p.name === name);
  }

  private async boot(): Promise<void> {
    await provisionServiceRoles(this.env.DATABASE_URL);
    const sim = await this.spawn('llm-sim', 'libs/testing/dist/llm-sim/main.js', 0);
    this.simUrl = `${sim.url}/v1`;
    Object.assign(this.env, {
      OPENAI_BASE_URL: this.simUrl,
      OPENAI_API_KEY: 'sk-test-sim',
      SKALD_LLM_MODEL: 'sim-model',
      ...(this.options.llmClients ? { SKALD_LLM_CLIENTS: JSON.stringify(this.options.llmClients(this.simUrl)) } : {}),
    });
    const r = this.options.replicas ?? {};
    const started: Array<Promise<StackProcess>> = [];
    for (const name of Object.keys(SCRIPTS) as Array<Exclude<AppName, 'llm-sim'>>) {
      for (let i = 0; i < (r[name] ?? 1); i++) started.push(this.spawn(name, SCRIPTS[name], i));
    }
    await Promise.all(started);
  }

  /** Starts one more replica of an app (e.g. a worker after a crash test). */
  addReplica(name: Exclude<AppName, 'llm-sim'>, env: Record<string, string> = {}): Promise<StackProcess> {
    return this.spawn(name, SCRIPTS[name], this.byName(name).length, env);
  }

  private async spawn(
    name: AppName,
    script: string,
    index: number,
    extraEnv: Record<string, string> = {},
  ): Promise<StackProcess> {
    const port = await freePort();
    const instance = `${name}-${index}-${port}`;
    const nodeArgs = this.options.nodeArgs?.[name] ?? [];
    const child = spawn(process.execPath, [...nodeArgs, path.join(this.options.root, script)], {
      cwd: this.options.root,
      env: {
        ...process.env,
        ...this.env,
        ...(name !== 'llm-sim' ? this.nats?.serviceEnv(name) : {}),
        ...this.redisEnv[name],
        ...this.serviceRoleEnv(name),
        ...(this.options.perApp?.[name as Exclude<AppName, 'llm-sim'>] ?? {}),
        ...extraEnv,
        PORT: String(port),
        HOST: '127.0.0.1',
        SKALD_INSTANCE: instance,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const proc: StackProcess = { name, instance, port, url: `http://127.0.0.1:${port}`, child, logs: [] };
    const collect = (d: Buffer): void => {
      for (const line of d.toString().split('\n')) if (line) proc.logs.push(line);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    this.processes.push(proc);
    await this.waitReady(proc, this.options.readyTimeoutMs);
    return proc;
  }

  private async waitReady(
    proc: StackProcess,
    timeoutMs = this.options.readyTimeoutMs ?? READY_TIMEOUT_MS,
  ): Promise<void> {
    const path = proc.name === 'llm-sim' ? '/v1/models' : '/readyz';
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (proc.child.exitCode !== null)
        throw new Error(`${proc.instance} exited with ${proc.child.exitCode}:\n${proc.logs.slice(-20).join('\n')}`);
      try {
        const r = await fetch(`${proc.url}${path}`);
        if (r.ok) return;
      } catch {
        /* not listening yet */
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${proc.instance} not ready after ${timeoutMs} ms:\n${proc.logs.slice(-20).join('\n')}`);
  }

  /** SIGTERM every process and wait for it (SIGKILL after the grace period). */
  async stop(): Promise<void> {
    await Promise.all(this.processes.map((p) => stopProcess(p.child, 'SIGTERM', 10_000)));
    if (this.ownsNats) await this.nats?.destroy();
    await this.dropRedisUsers();
    const refused = this.permissionErrors();
    if (refused.length > 0)
      throw new Error(`apps were refused by NATS or Redis permissions (contracts/access.ts):\n${refused.join('\n')}`);
  }

  /**
   * Log lines where NATS or Redis refused an app for want of a permission: a grant missing from
   * contracts/access.ts, which would break that path in production. `stop()` fails on any.
   */
  permissionErrors(): string[] {
    return this.processes.flatMap((p) =>
      p.logs
        .filter((l) => l.includes('NATS permissions violation') || l.includes('NOPERM'))
        .map((l) => `${p.instance}: ${l}`),
    );
  }

  /** The process of an app whose log has a line containing every one of `needles`. */
  findByLog(name: AppName, ...needles: string[]): StackProcess | undefined {
    return this.byName(name).find((p) => p.logs.some((l) => needles.every((n) => l.includes(n))));
  }

  // ---- Postgres roles: every app connects as its own role, provisioned by `boot` on the
  // admin URL, which `env.DATABASE_URL` stays (tests query with it). A DATABASE_URL in `perApp` or
  // in `addReplica`'s env wins.
  /** The credentials the apps were given (NATS and Redis passwords), by name: what a secrets scan looks for. */
  serviceSecrets(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const p of this.processes) {
      if (p.name === 'llm-sim') continue;
      const nats = this.nats?.serviceEnv(p.name).NATS_PASSWORD;
      if (nats) out[`${p.name} NATS password`] = nats;
      const redis = this.redisEnv[p.name]?.REDIS_URL;
      if (redis) out[`${p.name} Redis password`] = decodeURIComponent(new URL(redis).password);
    }
    return out;
  }

  private serviceRoleEnv(name: AppName): Record<string, string> {
    return name === 'llm-sim' ? {} : { DATABASE_URL: serviceDatabaseUrl(this.env.DATABASE_URL, name) };
  }

  /** Logs of every process, for a failure message. */
  dumpLogs(last = 30): string {
    return this.processes.map((p) => `--- ${p.instance}\n${p.logs.slice(-last).join('\n')}`).join('\n');
  }
}
