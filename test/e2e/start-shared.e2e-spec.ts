import { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Redis from 'ioredis';
import { Client } from 'pg';
import { freePort } from '@skald/testing';
import { until } from '../support/until';
import { ctrlC, gatewayApi, startCommand } from '../support/start-command';

const APPS = ['gateway', 'session-worker', 'approval-service', 'tool-runner', 'scheduler'];
const PG_SERVER = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald_test');
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

interface Stack {
  /** Its install name: what its roles, Redis users and keys are named after. */
  instance: string;
  database: string;
  state: string;
  gateway: number;
  env: NodeJS.ProcessEnv;
  child?: ChildProcess;
  out: () => string;
}

/**
 * Two `npm start` stacks of two installs on one Postgres cluster and one Redis server (staging and production, two
 * teams): one named after its database, one by SKALD_INSTANCE_NAME. Each keeps its own roles, Redis users and keys,
 * each llm-sim takes a spare port, and each completes a turn while the other runs.
 */
describe('two npm start stacks sharing a Postgres cluster and a Redis server', () => {
  jest.setTimeout(240_000);
  const tag = randomBytes(4).toString('hex');
  const stacks: Stack[] = [];

  beforeAll(async () => {
    const make = async (database: string, instance: string, extra: NodeJS.ProcessEnv): Promise<Stack> => {
      const url = new URL(PG_SERVER);
      url.pathname = `/${database}`;
      const ports = Object.fromEntries(await Promise.all(APPS.map(async (a) => [a, await freePort()] as const)));
      const state = mkdtempSync(path.join(tmpdir(), 'skald-shared-'));
      return {
        instance,
        database,
        state,
        gateway: ports.gateway,
        out: () => '',
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          DATABASE_URL: url.toString(),
          REDIS_URL,
          SKALD_STATE_DIR: state,
          ...Object.fromEntries(APPS.map((a) => [`PORT_${a.toUpperCase().replace(/-/g, '_')}`, String(ports[a])])),
          SKALD_SANDBOX_UNBOUNDED: 'allow',
          ...extra,
        },
      };
    };
    stacks.push(await make(`skald_e2e_a_${tag}`, `skald_e2e_a_${tag}`, {}));
    stacks.push(await make(`skald_e2e_b_${tag}`, `e2e_b_${tag}`, { SKALD_INSTANCE_NAME: `e2e_b_${tag}` }));
  });

  afterAll(async () => {
    await Promise.all(stacks.map((s) => stop(s)));
    const admin = new Client({ connectionString: PG_SERVER.toString() });
    await admin.connect();
    const redis = new Redis(REDIS_URL);
    try {
      for (const s of stacks) {
        await admin.query(`DROP DATABASE IF EXISTS "${s.database}" WITH (FORCE)`);
        for (const a of APPS) await admin.query(`DROP ROLE IF EXISTS "${s.instance}_${a.replace(/-/g, '_')}"`);
        await redis.call(
          'ACL',
          'DELUSER',
          ...['gateway', 'session-worker', 'scheduler'].map((a) => `${s.instance}-${a}`),
        );
        const keys = await redis.keys(`${s.instance}:*`);
        if (keys.length > 0) await redis.del(...keys);
        rmSync(s.state, { recursive: true, force: true });
      }
    } finally {
      await admin.end();
      redis.disconnect();
    }
  });

  async function start(s: Stack): Promise<void> {
    const started = await startCommand(s.env);
    s.child = started.child;
    s.out = started.out;
  }

  const stop = async (s: Stack) => (s.child ? ctrlC(s.child) : null);
  const api = (s: Stack, p: string, token?: string, body?: unknown) => gatewayApi(s.gateway)(p, token, body);

  /** Logs in as the stack's admin, sends a message and waits for llm-sim's reply. */
  async function turn(s: Stack): Promise<void> {
    const password = readFileSync(path.join(s.state, 'admin-password'), 'utf8').trim();
    const r = await api(s, '/api/auth/login', undefined, { email: 'admin@skald.local', password });
    expect(r.status).toBe(200);
    const { token } = (await r.json()) as { token: string };
    const sent = await api(s, '/api/web/messages', token, { client_message_id: `hi-${s.instance}`, content: 'Hi!' });
    expect(sent.status).toBeLessThan(300);
    await until(
      `the reply in ${s.instance}`,
      async () => {
        const body = (await (await api(s, '/api/sessions?source=web', token)).json()) as {
          items?: Array<{ message_count: number }>;
        };
        return body.items?.[0]?.message_count === 2;
      },
      30_000,
    );
  }

  it('run side by side, each with its own roles, Redis users, keys and llm-sim port, each completing a turn', async () => {
    const [a, b] = stacks;
    await start(a);
    await start(b);
    for (const s of stacks) {
      expect(s.out()).toContain(`Install name:      ${s.instance} (Postgres roles ${s.instance}_gateway`);
      expect(s.out()).toContain(
        `ACL users ${s.instance}-gateway, ${s.instance}-session-worker, ${s.instance}-scheduler`,
      );
    }
    // Each llm-sim on a spare port of its own (no LLM_SIM_PORT), named in the banner.
    const simPorts = stacks.map((s) => Number(readFileSync(path.join(s.state, 'llm-sim-port'), 'utf8')));
    expect(simPorts[0]).not.toBe(simPorts[1]);
    stacks.forEach((s, i) => expect(s.out()).toContain(`answers at http://127.0.0.1:${simPorts[i]}/v1`));

    // The first stack works on after the second provisioned its roles and Redis users; then the second.
    await turn(a);
    await turn(b);

    const admin = new Client({ connectionString: PG_SERVER.toString() });
    await admin.connect();
    const redis = new Redis(REDIS_URL);
    try {
      const { rows } = await admin.query<{ rolname: string }>(
        `SELECT rolname FROM pg_roles WHERE rolname = ANY($1::text[]) ORDER BY rolname`,
        [stacks.flatMap((s) => APPS.map((x) => `${s.instance}_${x.replace(/-/g, '_')}`))],
      );
      expect(rows).toHaveLength(10);
      const users = (await redis.call('ACL', 'USERS')) as string[];
      for (const s of stacks)
        expect(users).toEqual(expect.arrayContaining([`${s.instance}-gateway`, `${s.instance}-scheduler`]));
    } finally {
      await admin.end();
      redis.disconnect();
    }
    expect(await stop(b)).toBe(0);
    expect(await stop(a)).toBe(0);
  });
});
