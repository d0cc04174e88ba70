import fc from 'fast-check';
import { PerUserCache } from './per-user.cache';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const MAX_AGE = 1000;
const USERS = ['a', 'b', 'c', 'd'];

interface Write {
  user: string;
  version: number;
  at: number;
  /** Which op it was (orders it against gaps made at the same clock time). */
  step: number;
  rung: boolean;
}

type Op =
  | { kind: 'write'; user: string; rung: boolean }
  | { kind: 'get'; user: string }
  | { kind: 'settle'; index: number }
  | { kind: 'gap' }
  | { kind: 'tick'; ms: number };

const user = fc.constantFrom(...USERS);
const op: fc.Arbitrary<Op> = fc.oneof(
  // most writes ring their doorbell; some doorbells are lost
  fc.record({ kind: fc.constant('write' as const), user, rung: fc.boolean() }),
  fc.record({ kind: fc.constant('get' as const), user }),
  fc.record({ kind: fc.constant('get' as const), user }),
  fc.record({ kind: fc.constant('settle' as const), index: fc.nat(5) }),
  fc.record({ kind: fc.constant('gap' as const) }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 700 }) }),
);

const NOT_YET = Symbol('not yet');
const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('PerUserCache', () => {
  beforeAll(() => console.log(`per-user cache: seed=${SEED} — reproduce with FC_SEED=${SEED}`));

  it('answers from memory only what no rung doorbell, gap or age bound has overtaken; stays within its size', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 60 }), async (ops) => {
        let now = 0;
        const cache = new PerUserCache<number>({ maxUsers: 3, maxAgeMs: MAX_AGE, now: () => now });
        const truth = new Map<string, number>(USERS.map((u) => [u, 0]));
        const writes: Write[] = [];
        let lastGapStep = -1;
        // reads in flight: each answers the truth as of its start (the adversarial snapshot)
        const pending: Array<{ resolve: () => void }> = [];
        for (const [step, o] of ops.entries()) {
          switch (o.kind) {
            case 'write': {
              const version = truth.get(o.user)! + 1;
              truth.set(o.user, version);
              writes.push({ user: o.user, version, at: now, step, rung: o.rung });
              if (o.rung) cache.invalidate(o.user);
              break;
            }
            case 'get': {
              const snapshot = truth.get(o.user)!;
              const p = cache.get(
                o.user,
                () => new Promise<number>((resolve) => pending.push({ resolve: () => resolve(snapshot) })),
              );
              const answered = await Promise.race([p, Promise.resolve(NOT_YET)]);
              if (answered !== NOT_YET) {
                // answered from memory: every newer write was unrung, after the last gap, and younger than the bound
                for (const w of writes)
                  if (w.user === o.user && w.version > answered) {
                    expect(w.rung).toBe(false);
                    expect(w.step).toBeGreaterThan(lastGapStep);
                    expect(now - w.at).toBeLessThan(MAX_AGE);
                  }
              }
              break;
            }
            case 'settle': {
              const [p] = pending.splice(o.index % Math.max(1, pending.length), 1);
              p?.resolve();
              await flush();
              break;
            }
            case 'gap':
              cache.clear();
              lastGapStep = step;
              break;
            case 'tick':
              now += o.ms;
              break;
          }
          expect(cache.size).toBeLessThanOrEqual(3);
        }
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('shares one read between concurrent misses of a user, keeps it, and forgets a failed read', async () => {
    let now = 0;
    const cache = new PerUserCache<string[]>({ maxUsers: 10, maxAgeMs: MAX_AGE, now: () => now });
    let reads = 0;
    const read = async () => {
      reads++;
      await flush();
      return ['x'];
    };
    const [a, b] = await Promise.all([cache.get('u', read), cache.get('u', read)]);
    expect(a).toEqual(['x']);
    expect(b).toBe(a);
    expect(reads).toBe(1);
    await cache.get('u', read);
    expect(reads).toBe(1);
    now += MAX_AGE; // the bound is exclusive: a value this old is read again
    await cache.get('u', read);
    expect(reads).toBe(2);

    await expect(cache.get('v', () => Promise.reject(new Error('db down')))).rejects.toThrow('db down');
    expect(await cache.get('v', read)).toEqual(['x']);
    expect(reads).toBe(3);
  });

  it('does not keep a read that a gap or an invalidation overtook', async () => {
    for (const overtake of ['gap', 'invalidate'] as const) {
      const cache = new PerUserCache<number>({ maxUsers: 10, maxAgeMs: MAX_AGE, now: () => 0 });
      let release!: () => void;
      const first = cache.get('u', () => new Promise<number>((resolve) => (release = () => resolve(1))));
      if (overtake === 'gap') cache.clear();
      else cache.invalidate('u');
      release();
      expect(await first).toBe(1); // its caller gets what it read
      expect(await cache.get('u', () => Promise.resolve(2))).toBe(2);
    }
  });

  it('evicts the least recently used user past its size', async () => {
    const cache = new PerUserCache<string>({ maxUsers: 2, maxAgeMs: MAX_AGE, now: () => 0 });
    const reads: string[] = [];
    const read = (u: string) => () => {
      reads.push(u);
      return Promise.resolve(u);
    };
    await cache.get('a', read('a'));
    await cache.get('b', read('b'));
    await cache.get('a', read('a')); // a is now the most recent
    await cache.get('c', read('c')); // b goes
    await cache.get('a', read('a'));
    await cache.get('b', read('b'));
    expect(reads).toEqual(['a', 'b', 'c', 'b']);
    expect(cache.size).toBe(2);
  });

  it('keeps nothing with a zero age bound', async () => {
    const cache = new PerUserCache<string>({ maxUsers: 2, maxAgeMs: 0 });
    let reads = 0;
    const read = () => Promise.resolve(String(++reads));
    await cache.get('a', read);
    await cache.get('a', read);
    expect(reads).toBe(2);
    expect(cache.size).toBe(0);
  });
});
