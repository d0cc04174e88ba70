/**
 * The throttled health store writes a success only when it changes something, yet every reader
 * judges a client as if every success had been written: the same state and failure count as the
 * unthrottled store, for any sequence of calls, failures and reads, on one replica and on two.
 */
import fc from 'fast-check';
import { InMemoryLlmHealthStore, type LlmHealth, type LlmHealthStore } from './llm-health';
import { ResilientLlmHealthStore } from './llm-health-resilient';
import { ThrottledLlmHealthStore } from './llm-health-throttled';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const REFRESH_MS = 10_000;

/** The shared store (Redis in production), counting the writes that reach it. */
class CountingStore implements LlmHealthStore {
  readonly inner = new InMemoryLlmHealthStore();
  successWrites = 0;
  failureWrites = 0;
  recordSuccess(name: string): Promise<void> {
    this.successWrites++;
    return this.inner.recordSuccess(name);
  }
  recordFailure(name: string, error: string): Promise<void> {
    this.failureWrites++;
    return this.inner.recordFailure(name, error);
  }
  read(names: readonly string[]): Promise<Map<string, LlmHealth>> {
    return this.inner.read(names);
  }
}

const judged = (h: LlmHealth | undefined) => ({ state: h?.state, failures: h?.consecutiveFailures });

const opArb = fc.record({
  replica: fc.integer({ min: 0, max: 1 }),
  client: fc.constantFrom('a', 'b'),
  advanceMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3 * REFRESH_MS })),
  op: fc.oneof(
    fc.record({ kind: fc.constant('call' as const), ok: fc.boolean() }),
    fc.record({ kind: fc.constant('read' as const) }),
  ),
});

describe('ThrottledLlmHealthStore', () => {
  beforeAll(() => console.log(`llm-health-throttled: seed=${SEED} — reproduce with FC_SEED=${SEED}`));

  it('one replica: every read judges each client exactly as the unthrottled store does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 60 }), async (ops) => {
        let clock = 0;
        const shared = new CountingStore();
        const store = new ThrottledLlmHealthStore(shared, { refreshMs: REFRESH_MS, now: () => clock });
        const reference = new InMemoryLlmHealthStore();
        for (const { client, advanceMs, op } of ops) {
          clock += advanceMs;
          if (op.kind === 'call') {
            // The manager reads health before it picks a client, then records the outcome.
            await store.read([client]);
            if (op.ok) await Promise.all([store.recordSuccess(client), reference.recordSuccess(client)]);
            else
              await Promise.all([store.recordFailure(client, 'HTTP 503'), reference.recordFailure(client, 'HTTP 503')]);
          }
          const [got, want] = await Promise.all([store.read(['a', 'b']), reference.read(['a', 'b'])]);
          for (const c of ['a', 'b']) expect(judged(got.get(c))).toEqual(judged(want.get(c)));
        }
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('two replicas: a success after a read that saw failures resets them for everyone', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 60 }), async (ops) => {
        let clock = 0;
        const shared = new CountingStore();
        const replicas = [0, 1].map(
          () => new ThrottledLlmHealthStore(shared, { refreshMs: REFRESH_MS, now: () => clock }),
        );
        for (const { replica, client, advanceMs, op } of ops) {
          clock += advanceMs;
          const store = replicas[replica];
          if (op.kind === 'read') {
            await store.read([client]);
            continue;
          }
          const before = (await store.read([client])).get(client);
          if (op.ok) {
            await store.recordSuccess(client);
            // Whichever replica reads now: the client is healthy, no failure counted.
            for (const r of replicas)
              expect(judged((await r.read([client])).get(client))).toEqual({ state: 'healthy', failures: 0 });
          } else {
            await store.recordFailure(client, 'HTTP 503');
            // Failures are never throttled: every replica sees this one at once.
            const after = (await replicas[1 - replica].read([client])).get(client);
            expect(after?.consecutiveFailures).toBe((before?.consecutiveFailures ?? 0) + 1);
          }
        }
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('a read in flight when a failure is recorded does not make the failure look reset', async () => {
    const shared = new CountingStore();
    let release: () => void = () => undefined;
    const slow: LlmHealthStore = {
      recordSuccess: (n) => shared.recordSuccess(n),
      recordFailure: (n, e) => shared.recordFailure(n, e),
      read: async (names) => {
        const snapshot = await shared.read(names);
        await new Promise<void>((r) => (release = r));
        return snapshot;
      },
    };
    const store = new ThrottledLlmHealthStore(slow, { refreshMs: REFRESH_MS, now: () => 0 });
    await store.recordSuccess('a'); // written: nothing known yet
    const reading = store.read(['a']); // sees a clean record...
    await new Promise((r) => setImmediate(r));
    await store.recordFailure('a', 'HTTP 500'); // ...while this failure is written
    release();
    await reading;
    await store.recordSuccess('a');
    expect((await shared.read(['a'])).get('a')).toMatchObject({ consecutiveFailures: 0, lastError: null });
  });

  it('a healthy client costs one shared write per refresh interval, whatever the number of calls', async () => {
    let clock = 0;
    const shared = new CountingStore();
    const store = new ThrottledLlmHealthStore(shared, { refreshMs: REFRESH_MS, now: () => clock });
    for (let i = 0; i < 6_000; i++) {
      clock += 10; // 100 calls a second for a minute
      await store.read(['a']);
      await store.recordSuccess('a');
    }
    expect(shared.successWrites).toBe(Math.ceil(60_000 / REFRESH_MS));
    // And the record it keeps is at most one interval old.
    const last = (await shared.read(['a'])).get('a')?.lastSuccessAt;
    expect(last).not.toBeNull();
  });
});

describe('ThrottledLlmHealthStore over the resilient store', () => {
  it('says shared or local as the store it wraps does (a skipped write is no news about Redis)', async () => {
    const down: LlmHealthStore = {
      recordSuccess: () => Promise.reject(new Error('ECONNREFUSED')),
      recordFailure: () => Promise.reject(new Error('ECONNREFUSED')),
      read: () => Promise.reject(new Error('ECONNREFUSED')),
    };
    const store = new ThrottledLlmHealthStore(new ResilientLlmHealthStore(down));
    expect(store.mode()).toBe('shared');
    await store.recordFailure('a', 'HTTP 503');
    expect(store.mode()).toBe('local');
    await store.recordSuccess('a');
    await store.recordSuccess('a'); // skipped: must not look like the shared store answered
    expect(store.mode()).toBe('local');
    expect((await store.read(['a'])).get('a')).toMatchObject({ state: 'healthy', consecutiveFailures: 0 });
  });
});
