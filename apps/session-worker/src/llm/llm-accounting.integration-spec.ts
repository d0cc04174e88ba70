import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { DataSource } from 'typeorm';
import { healthStateFor } from '@skald/llm';
import { RedisLlmHealthStore } from './redis-llm-health.store';
import { LlmUsageRepository, type UsageRecord } from './llm-usage.repository';

jest.setTimeout(60_000);

describe('shared LLM health in Redis', () => {
  let redis: Redis;
  const prefix = `skald-it-${randomUUID()}:`;

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('counts every failure of replicas failing at the same moment (atomic), and a success resets it', async () => {
    const replicas = Array.from({ length: 4 }, () => new RedisLlmHealthStore(redis, prefix, 60));
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => replicas[i % replicas.length].recordFailure('gpt', `HTTP 503 #${i}`)),
    );
    const seen = (await replicas[0].read(['gpt', 'never-called'])).get('gpt');
    expect(seen).toMatchObject({ consecutiveFailures: 20, state: 'down' });
    expect(seen?.lastError).toMatch(/^HTTP 503 #\d+$/);
    expect((await replicas[1].read(['never-called'])).get('never-called')).toMatchObject({
      state: 'healthy',
      consecutiveFailures: 0,
    });

    await replicas[2].recordSuccess('gpt');
    const healed = (await replicas[3].read(['gpt'])).get('gpt');
    expect(healed).toMatchObject({ state: 'healthy', consecutiveFailures: 0, lastError: null });
    expect(healed?.lastSuccessAt).not.toBeNull();
    expect(healthStateFor(3)).toBe('degraded');
  });

  it('gives each key a time to live, so a client nobody calls is forgotten', async () => {
    const store = new RedisLlmHealthStore(redis, prefix, 60);
    await store.recordFailure('ttl-client', 'x');
    const ttl = await redis.ttl(`${prefix}ttl-client`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60);
  });
});

describe('the LLM ledger and pins in Postgres', () => {
  let ds: DataSource;
  let repo: LlmUsageRepository;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
    repo = new LlmUsageRepository(ds);
  });
  afterAll(() => ds.destroy());

  const usage = (userId: string, sessionId: string, over: Partial<UsageRecord> = {}): UsageRecord => ({
    userId,
    sessionId,
    frameId: randomUUID(),
    messageId: randomUUID(),
    purpose: 'round',
    client: 'gpt',
    model: 'gpt-4.1-mini',
    inputTokens: 1000,
    outputTokens: 100,
    cachedInputTokens: 0,
    estimated: false,
    costUsd: 0.00056,
    ...over,
  });

  it("sums a user's tokens of today only, across sessions, and says when the UTC day ends", async () => {
    const user = randomUUID();
    const other = randomUUID();
    await repo.record(usage(user, randomUUID()));
    await repo.record(usage(user, randomUUID(), { purpose: 'compaction', messageId: null, inputTokens: 50 }));
    await repo.record(usage(other, randomUUID(), { inputTokens: 999_999 }));
    await ds.query(
      `INSERT INTO llm_usage (user_id, purpose, client, model, input_tokens, output_tokens, created_at)
       VALUES ($1, 'round', 'gpt', 'm', 77777, 0, now() - interval '1 day')`,
      [user],
    );
    // A round call's row waits for its message's commit (none comes here): written alone.
    await repo.flushWaiting();
    const today = await repo.today({ userId: user });
    expect(today.usedTokens).toBe(1100 + 150);
    expect(today.resetsAt.toISOString()).toMatch(/T00:00:00\.000Z$/);
    const left = today.resetsAt.getTime() - Date.now();
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(24 * 3600 * 1000);
  });

  it('totals a session per client; the cost is unknown when any call of a client had no price', async () => {
    const user = randomUUID();
    const session = randomUUID();
    await repo.record(usage(user, session));
    await repo.record(usage(user, session, { estimated: true }));
    await repo.record(usage(user, session, { client: 'local', model: 'qwen3', costUsd: null }));
    await repo.record(usage(randomUUID(), session));
    await repo.flushWaiting();
    expect(await repo.sessionTotals({ userId: user, sessionId: session })).toEqual([
      {
        client: 'gpt',
        model: 'gpt-4.1-mini',
        calls: 2,
        inputTokens: 2000,
        outputTokens: 200,
        costUsd: 0.00112,
        estimated: true,
      },
      {
        client: 'local',
        model: 'qwen3',
        calls: 1,
        inputTokens: 1000,
        outputTokens: 100,
        costUsd: null,
        estimated: false,
      },
    ]);
  });

  it('keeps one pin per user and source; null clears it', async () => {
    const user = randomUUID();
    await repo.setPin({ userId: user, source: 'web' }, 'gpt');
    await repo.setPin({ userId: user, source: 'web' }, 'local');
    await repo.setPin({ userId: user, source: 'cli' }, 'gpt');
    expect(await repo.pin({ userId: user, source: 'web' })).toBe('local');
    expect(await repo.pin({ userId: randomUUID(), source: 'web' })).toBeNull();
    await repo.setPin({ userId: user, source: 'web' }, null);
    expect(await repo.pin({ userId: user, source: 'web' })).toBeNull();
    expect(await repo.pin({ userId: user, source: 'cli' })).toBe('gpt');
  });
});
