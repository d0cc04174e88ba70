import { randomBytes, randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { connect, NatsConnection } from 'nats';
import { redisAclRules, SkaldService } from '@skald/contracts';
import { Bus, BusLogger, NatsBus } from '@skald/messaging';
import { PrivateNats } from '@skald/testing';

jest.setTimeout(60_000);

/**
 * The permissions of contracts/access.ts as the real servers enforce them: one NATS user per
 * service, Redis ACL users reaching only their own keys.
 */
describe('NATS users per service', () => {
  let nats: PrivateNats;
  const open: Array<NatsConnection | Bus> = [];
  const errors: Array<{ obj: object; msg: string }> = [];
  const log: BusLogger = { warn: () => undefined, error: (obj, msg) => errors.push({ obj, msg }) };

  beforeAll(async () => {
    nats = await PrivateNats.start({ serviceUsers: true });
  });
  afterAll(async () => {
    for (const c of open) await (c instanceof NatsBus ? c.drain() : c.close());
    await nats?.destroy();
  });

  async function busAs(service: SkaldService): Promise<Bus> {
    const env = nats.serviceEnv(service);
    const bus = await NatsBus.connect(
      {
        servers: nats.url,
        name: `perm-${service}`,
        user: env.NATS_USER,
        pass: env.NATS_PASSWORD,
        requestTimeoutMs: 2000,
      },
      log,
    );
    open.push(bus);
    return bus;
  }

  async function rawAs(service: SkaldService): Promise<NatsConnection> {
    const env = nats.serviceEnv(service);
    const nc = await connect({ servers: nats.url, user: env.NATS_USER, pass: env.NATS_PASSWORD });
    open.push(nc);
    return nc;
  }

  it('refuses an anonymous client and a wrong password', async () => {
    await expect(connect({ servers: nats.url })).rejects.toThrow(/Authorization Violation/);
    await expect(connect({ servers: nats.url, user: 'tool-runner', pass: 'guess' })).rejects.toThrow(
      /Authorization Violation/,
    );
  });

  it('lets the session worker call the tool runner, and nobody else (the NetworkPolicy, on the bus)', async () => {
    const runner = await busAs('tool-runner');
    let executed = 0;
    runner.handle('tools.memory_turn', () => {
      executed += 1;
      return Promise.resolve({ documents: [], context: null });
    });
    await runner.nc.flush();

    const worker = await busAs('session-worker');
    const req = {
      actor: { userId: randomUUID(), role: 'user' as const },
      paths: ['memory/notes.md'],
      query: 'notes',
    };
    const reply = await worker.request('tools.memory_turn', req);
    expect(reply.ok).toBe(true);
    expect(executed).toBe(1);

    const gateway = await busAs('gateway');
    await expect(gateway.request('tools.memory_turn', req)).rejects.toThrow(/Permissions Violation/);
    const scheduler = await busAs('scheduler');
    await expect(scheduler.request('tools.memory_turn', req)).rejects.toThrow(/Permissions Violation/);
    expect(executed).toBe(1);
    // the refusal is in the caller's log at error level, naming the subject
    await new Promise((r) => setTimeout(r, 200));
    expect(errors).toContainEqual({
      obj: { operation: 'publish', subject: 'tools.memory_turn' },
      msg: 'NATS permissions violation',
    });
  });

  it("keeps each service's replies and other services' topics from the rest", async () => {
    const gateway = await busAs('gateway');
    const runner = await rawAs('tool-runner');
    const seen: string[] = [];
    // the tool runner tries to read the gateway's replies and every session's events
    for (const subject of ['_INBOX.gateway.>', 'events.*.*', 'session.*.wake']) {
      const sub = runner.subscribe(subject);
      void (async () => {
        for await (const m of sub) seen.push(m.subject);
      })().catch(() => undefined);
    }
    await runner.flush().catch(() => undefined);

    // the worker answers the gateway's request and publishes an event: none reaches the runner
    const worker = await busAs('session-worker');
    worker.handle('session.active', () => Promise.resolve({ session_id: randomUUID(), created: false }));
    await worker.nc.flush();
    const reply = await gateway.request('session.active', {
      actor: { userId: randomUUID(), role: 'user' },
      source: 'web',
    });
    expect(reply.ok).toBe(true);
    worker.nc.publish('events.u1.s1', '{}');
    worker.nc.publish('session.s1.wake', '{}');
    await worker.nc.flush();
    await new Promise((r) => setTimeout(r, 300));
    expect(seen).toEqual([]);
  });

  it('refuses a service publishing what only another may announce', async () => {
    const scheduler = await rawAs('scheduler');
    const listener = await connect({ servers: nats.url, ...nats.testUser });
    open.push(listener);
    const got: string[] = [];
    const sub = listener.subscribe('approval.resolved.*');
    void (async () => {
      for await (const m of sub) got.push(m.subject);
    })();
    await listener.flush();
    // only the approval service may say an approval was resolved
    scheduler.publish('approval.resolved.s1', '{}');
    await scheduler.flush().catch(() => undefined);
    const approvals = await rawAs('approval-service');
    approvals.publish('approval.resolved.s2', '{}');
    await approvals.flush();
    await new Promise((r) => setTimeout(r, 300));
    expect(got).toEqual(['approval.resolved.s2']);
  });
});

describe('Redis users per service', () => {
  const admin = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: true });
  const tag = randomBytes(4).toString('hex');
  const prefixes = {
    bullPrefix: `perm-${tag}`,
    llmHealthPrefix: `perm-${tag}:llm:health:`,
    loginLimitPrefix: `perm-${tag}:login:`,
  };
  const clients: Redis[] = [];

  async function as(service: 'scheduler' | 'session-worker' | 'gateway'): Promise<Redis> {
    const user = `perm-${tag}-${service}`;
    const password = randomBytes(12).toString('hex');
    await admin.call('ACL', 'SETUSER', user, 'reset', ...redisAclRules(service, password, prefixes));
    const c = new Redis({
      host: '127.0.0.1',
      port: Number(new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379').port || 6379),
      username: user,
      password,
      lazyConnect: true,
      maxRetriesPerRequest: 1,
    });
    await c.connect();
    clients.push(c);
    return c;
  }

  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await admin.call('ACL', 'DELUSER', `perm-${tag}-scheduler`, `perm-${tag}-session-worker`, `perm-${tag}-gateway`);
    const keys = await admin.keys(`perm-${tag}*`);
    if (keys.length) await admin.del(...keys);
    admin.disconnect();
  });

  it('gives the scheduler its queue and the worker its LLM health, nothing else', async () => {
    const scheduler = await as('scheduler');
    const worker = await as('session-worker');
    const queueKey = `${prefixes.bullPrefix}:skald-jobs:meta`;
    const healthKey = `${prefixes.llmHealthPrefix}default`;

    await scheduler.set(queueKey, '1');
    await worker.hset(healthKey, 'failures', '0');
    expect(await scheduler.get(queueKey)).toBe('1');
    expect(await worker.hget(healthKey, 'failures')).toBe('0');
    // the scheduler reads the eviction policy at start
    expect(await scheduler.config('GET', 'maxmemory-policy')).toHaveLength(2);

    await expect(worker.get(queueKey)).rejects.toThrow(/NOPERM/);
    await expect(scheduler.hget(healthKey, 'failures')).rejects.toThrow(/NOPERM/);
    await expect(worker.get('some-other-app:key')).rejects.toThrow(/NOPERM/);
    // no admin or dangerous commands
    await expect(scheduler.flushall()).rejects.toThrow(/NOPERM/);
    await expect(worker.keys('*')).rejects.toThrow(/NOPERM/);
    await expect(worker.config('SET', 'maxmemory-policy', 'allkeys-lru')).rejects.toThrow(/NOPERM/);
  });

  it('gives the gateway its login counters (and the scripts the throttle runs on them), nothing else', async () => {
    const gateway = await as('gateway');
    const key = `${prefixes.loginLimitPrefix}account:x`;
    // the shape of rate-limiter-flexible's Redis script: INCR with expiry, then read back the TTL
    const script = `local c = redis.call('incr', KEYS[1]) if c == 1 then redis.call('pexpire', KEYS[1], ARGV[1]) end return {c, redis.call('pttl', KEYS[1])}`;
    expect(await gateway.eval(script, 1, key, '60000')).toEqual([1, expect.any(Number)]);
    expect(await gateway.del(key)).toBe(1);
    await expect(gateway.get(`${prefixes.llmHealthPrefix}default`)).rejects.toThrow(/NOPERM/);
    await expect(gateway.get(`${prefixes.bullPrefix}:skald-jobs:meta`)).rejects.toThrow(/NOPERM/);
    await expect(gateway.eval(script, 1, 'elsewhere', '60000')).rejects.toThrow(/NOPERM/);
    await expect(gateway.flushall()).rejects.toThrow(/NOPERM/);
  });
});
