/**
 * The worker's LLM health on a real Redis, two workers sharing it: picking a client before every
 * model call does not read Redis each time (the reads reaching Redis are counted with MONITOR,
 * by this test's key prefix), and a client another worker finds down is avoided within
 * SKALD_LLM_HEALTH_CACHE_MS.
 */
import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { LlmManager, type LlmClientDefinition } from '@skald/llm';
import { sharedLlmHealth } from './shared-llm-health';

jest.setTimeout(60_000);

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const CACHE_MS = 400;
/** What the workers log: a warning means one judged on its own calls (Redis slower than the wait). */
const warnings: unknown[] = [];
const log = { info: () => undefined, warn: (...args: unknown[]) => void warnings.push(args) };
/** Redis may be slow on a loaded machine: the workers wait for it, so health stays shared throughout. */
const SHARED_TIMEOUT_MS = 10_000;

function client(name: string, priority: number): LlmClientDefinition {
  return {
    name,
    baseUrl: 'http://127.0.0.1:9/v1',
    model: name,
    apiKey: null,
    strength: 'medium',
    scopes: [],
    priority,
    cacheControl: false,
    timeoutMs: 1_000,
    idleTimeoutMs: 1_000,
    headers: {},
    extraParams: {},
    pricing: null,
    vision: null,
  };
}

describe('shared LLM health, cached by each worker', () => {
  const prefix = `skald-it-${randomUUID()}:llm:health:`;
  let admin: Redis;
  let monitor: Awaited<ReturnType<Redis['monitor']>>;
  const reads: number[] = [];
  const workers: Array<ReturnType<typeof sharedLlmHealth>> = [];

  const worker = () => {
    const shared = sharedLlmHealth(
      {
        REDIS_URL,
        SKALD_LLM_HEALTH_PREFIX: prefix,
        SKALD_LLM_HEALTH_TTL_S: 60,
        SKALD_LLM_HEALTH_CACHE_MS: CACHE_MS,
      },
      log as never,
      SHARED_TIMEOUT_MS,
    );
    workers.push(shared);
    return {
      health: shared.health,
      llm: new LlmManager([client('main', 1), client('spare', 10)], { health: shared.health }),
    };
  };

  beforeAll(async () => {
    admin = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    monitor = await admin.monitor();
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'hgetall' && args[1]?.startsWith(prefix)) reads.push(Date.now());
    });
  });
  afterEach(() => {
    // every claim above is about shared health: no worker fell back to its own record
    expect(warnings).toEqual([]);
  });
  afterAll(async () => {
    for (const w of workers) await w.close();
    monitor.disconnect();
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(...keys);
    await admin.quit();
  });

  it('picking a client before each of 300 model calls reads Redis at most once per bound', async () => {
    const { llm } = worker();
    await new Promise((r) => setTimeout(r, 100)); // connected
    const before = reads.length;
    const started = Date.now();
    for (let i = 0; i < 300; i++) {
      expect((await llm.select({ tried: [] }))?.name).toBe('main');
      if (i % 30 === 0) await new Promise((r) => setTimeout(r, 10));
    }
    const elapsed = Date.now() - started;
    // MONITOR's lines arrive after the commands: wait for the first, then a little more.
    for (let t = 0; reads.length === before && t < 5_000; t += 20) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300));
    const made = reads.length - before;
    // One pipeline of two HGETALLs per shared read; the first pick reads, then at most one per bound.
    expect(made / 2).toBeGreaterThanOrEqual(1);
    expect(made / 2).toBeLessThanOrEqual(Math.ceil(elapsed / CACHE_MS) + 1);
  });

  it("a client another worker finds down is avoided once the bound has passed; a worker's own failure at once", async () => {
    const a = worker();
    const b = worker();
    const c = worker();
    await new Promise((r) => setTimeout(r, 100));
    expect((await b.llm.select({ tried: [] }))?.name).toBe('main'); // b has a fresh read cached
    expect((await c.llm.select({ tried: [] }))?.name).toBe('main'); // so has c
    for (let i = 0; i < 5; i++) await a.health.recordFailure('main', 'HTTP 503');
    const changed = Date.now();
    expect((await a.llm.select({ tried: [] }))?.name).toBe('spare');
    // What a person reads (GET /api/llm/clients, /models) is read fresh, whatever picks have cached.
    expect((await c.llm.list())[0]).toMatchObject({ name: 'main', health: 'down', consecutiveFailures: 5 });
    // b's read is at most the bound old: once the bound has passed since the change, b's next pick
    // avoids the client (a time the test waits, not one it must meet, so load cannot fail it).
    await new Promise((r) => setTimeout(r, CACHE_MS - (Date.now() - changed) + 10));
    expect((await b.llm.select({ tried: [] }))?.name).toBe('spare');
    // And back: a success on b is seen by b's next pick, and by a once the bound has passed.
    await b.health.recordSuccess('main');
    expect((await b.llm.select({ tried: [] }))?.name).toBe('main');
    await new Promise((r) => setTimeout(r, CACHE_MS + 10));
    expect((await a.llm.select({ tried: [] }))?.name).toBe('main');
  });
});
