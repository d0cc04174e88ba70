/**
 * The cached health store answers from memory, yet every read returns what the shared store held
 * at some moment of the last `maxAgeMs` (a change another replica made is seen within the bound),
 * a replica's own writes are seen by its next read, and the shared store is read at most once per
 * bound however many calls ask — for any sequence of writes (here, by another replica or the
 * record's expiry), reads and clock steps, on several replicas.
 */
import fc from 'fast-check';
import { healthStateFor, initialHealth, type LlmHealth, type LlmHealthStore } from './llm-health';
import { CachedLlmHealthStore } from './llm-health-cached';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const MAX_AGE = 1_000;
const CLIENTS = ['a', 'b'];

/** The shared store (Redis in production): every write a new version of the client's record, with when it was made. */
class VersionedStore implements LlmHealthStore {
  private readonly records = new Map<string, LlmHealth>();
  readonly versions = new Map<string, Array<{ at: number; failures: number; lastError: string | null }>>();
  reads = 0;

  constructor(private readonly clock: () => number) {
    for (const c of CLIENTS) this.versions.set(c, [{ at: -Infinity, failures: 0, lastError: null }]);
  }
  private set(name: string, h: LlmHealth | null): Promise<void> {
    if (h) this.records.set(name, h);
    else this.records.delete(name);
    this.versions
      .get(name)
      ?.push({ at: this.clock(), failures: h?.consecutiveFailures ?? 0, lastError: h?.lastError ?? null });
    return Promise.resolve();
  }
  private get(name: string): LlmHealth {
    return { ...(this.records.get(name) ?? initialHealth()) };
  }
  recordSuccess(name: string): Promise<void> {
    const at = new Date(this.clock()).toISOString();
    return this.set(name, {
      ...this.get(name),
      state: 'healthy',
      consecutiveFailures: 0,
      lastSuccessAt: at,
      lastError: null,
    });
  }
  recordFailure(name: string, error: string): Promise<void> {
    const h = this.get(name);
    const failures = h.consecutiveFailures + 1;
    const at = new Date(this.clock()).toISOString();
    return this.set(name, {
      ...h,
      state: healthStateFor(failures),
      consecutiveFailures: failures,
      lastFailureAt: at,
      lastError: error,
    });
  }
  /** The record's time to live ran out: healthy again. */
  expire(name: string): Promise<void> {
    return this.set(name, null);
  }
  read(names: readonly string[]): Promise<Map<string, LlmHealth>> {
    this.reads++;
    return Promise.resolve(new Map(names.map((n) => [n, this.get(n)])));
  }
}

const opArb = fc.record({
  replica: fc.integer({ min: 0, max: 2 }),
  client: fc.constantFrom(...CLIENTS),
  advanceMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 3 * MAX_AGE })),
  op: fc.constantFrom('read', 'read', 'read', 'success', 'failure', 'other-failure', 'other-success', 'expire'),
});

describe('CachedLlmHealthStore', () => {
  beforeAll(() => console.log(`llm-health-cached: seed=${SEED} — reproduce with FC_SEED=${SEED}`));

  it('every read is the shared record of the last maxAgeMs, and a replica reads its own writes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 80 }), async (ops) => {
        let clock = 0;
        const shared = new VersionedStore(() => clock);
        const replicas = [0, 1, 2].map(() => new CachedLlmHealthStore(shared, { maxAgeMs: MAX_AGE, now: () => clock }));
        /** The version index of each client's record each replica last wrote. */
        const ownWrite = replicas.map(() => new Map<string, number>());
        for (const { replica, client, advanceMs, op } of ops) {
          clock += advanceMs;
          const store = replicas[replica];
          switch (op) {
            case 'success':
              await store.recordSuccess(client);
              ownWrite[replica].set(client, shared.versions.get(client)!.length - 1);
              break;
            case 'failure':
              await store.recordFailure(client, `HTTP 503 @${clock}`);
              ownWrite[replica].set(client, shared.versions.get(client)!.length - 1);
              break;
            // Another worker (no cache of ours knows) or Redis itself changes the record.
            case 'other-failure':
              await shared.recordFailure(client, `other @${clock}`);
              break;
            case 'other-success':
              await shared.recordSuccess(client);
              break;
            case 'expire':
              await shared.expire(client);
              break;
            case 'read': {
              const got = await store.read(CLIENTS);
              for (const c of CLIENTS) {
                const h = got.get(c) as LlmHealth;
                const versions = shared.versions.get(c)!;
                // Some version current at an instant of [clock - MAX_AGE, clock], not older than our own write.
                const matching = versions
                  .map((v, i) => ({ v, i, until: versions[i + 1]?.at ?? Infinity }))
                  .filter(({ v }) => v.failures === h.consecutiveFailures && v.lastError === h.lastError)
                  .filter(({ v, until }) => v.at <= clock && until > clock - MAX_AGE)
                  .filter(({ i }) => i >= (ownWrite[replica].get(c) ?? 0));
                expect(matching.length).toBeGreaterThan(0);
              }
              break;
            }
          }
        }
      }),
      { seed: SEED, numRuns: 1500 },
    );
  });

  it('reads the shared store at most once per maxAgeMs, however many calls ask (100 calls a second for a minute)', async () => {
    let clock = 0;
    const shared = new VersionedStore(() => clock);
    const store = new CachedLlmHealthStore(shared, { maxAgeMs: MAX_AGE, now: () => clock });
    for (let i = 0; i < 6_000; i++) {
      clock += 10;
      await store.read(CLIENTS);
    }
    expect(shared.reads).toBe(60);
  });

  it('concurrent reads share one shared read; a read in flight when a write starts is not kept for that client', async () => {
    let clock = 0;
    const shared = new VersionedStore(() => clock);
    let release: () => void = () => undefined;
    let gate = false;
    const slow: LlmHealthStore = {
      recordSuccess: (n) => shared.recordSuccess(n),
      recordFailure: (n, e) => shared.recordFailure(n, e),
      read: async (names) => {
        const snapshot = await shared.read(names);
        if (gate) await new Promise<void>((r) => (release = r));
        return snapshot;
      },
    };
    const store = new CachedLlmHealthStore(slow, { maxAgeMs: MAX_AGE, now: () => clock });
    gate = true;
    const reads = Array.from({ length: 50 }, () => store.read(CLIENTS));
    await new Promise((r) => setImmediate(r));
    expect(shared.reads).toBe(1);
    // While that read (which saw no failure) is in flight, this replica records one.
    await store.recordFailure('a', 'HTTP 500');
    release();
    gate = false;
    for (const r of await Promise.all(reads)) expect(r.get('a')?.consecutiveFailures).toBe(0);
    // The stale answer was not kept: the next read asks the shared store and sees the failure.
    expect((await store.read(CLIENTS)).get('a')?.consecutiveFailures).toBe(1);
    expect(shared.reads).toBe(2);
    // A read after a local write does not join a read in flight from before it.
    gate = true;
    clock += MAX_AGE;
    const before = store.read(CLIENTS);
    await new Promise((r) => setImmediate(r));
    const releaseFirst = release;
    await store.recordFailure('a', 'HTTP 500');
    const after = store.read(CLIENTS);
    await new Promise((r) => setImmediate(r));
    expect(shared.reads).toBe(4);
    releaseFirst();
    release();
    expect((await before).get('a')?.consecutiveFailures).toBe(1);
    expect((await after).get('a')?.consecutiveFailures).toBe(2);
  });

  it('a fresh read goes to the shared store, and its answer serves the next reads', async () => {
    let clock = 0;
    const shared = new VersionedStore(() => clock);
    const store = new CachedLlmHealthStore(shared, { maxAgeMs: MAX_AGE, now: () => clock });
    await store.read(CLIENTS);
    await shared.recordFailure('a', 'from another replica');
    clock += 10;
    expect((await store.read(CLIENTS)).get('a')?.consecutiveFailures).toBe(0);
    expect((await store.read(CLIENTS, { fresh: true })).get('a')?.consecutiveFailures).toBe(1);
    expect((await store.read(CLIENTS)).get('a')?.consecutiveFailures).toBe(1);
    expect(shared.reads).toBe(2);
  });

  it('a caller changing the returned map or records does not change what the next caller reads', async () => {
    const shared = new VersionedStore(() => 0);
    const store = new CachedLlmHealthStore(shared, { maxAgeMs: MAX_AGE, now: () => 0 });
    const first = await store.read(CLIENTS);
    (first.get('a') as LlmHealth).consecutiveFailures = 99;
    first.delete('b');
    const second = await store.read(CLIENTS);
    expect(second.get('a')?.consecutiveFailures).toBe(0);
    expect(second.has('b')).toBe(true);
  });
});
