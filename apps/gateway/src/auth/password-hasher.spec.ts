import fc from 'fast-check';
import { Registry } from 'prom-client';
import { ApiError } from '../http/api-error';
import { Hashing, PasswordHasher, Slots, SlotsBusy } from './password-hasher';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
/** Every promise continuation queued so far has run (a macrotask turn comes after all microtasks). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Hashing that counts calls and the most ever running at once; each call ends when the test says. */
function countingHashing() {
  let running = 0;
  const stats = { calls: 0, maxRunning: 0 };
  const pending: Array<() => void> = [];
  const slow = async <T>(value: T): Promise<T> => {
    stats.calls++;
    running++;
    stats.maxRunning = Math.max(stats.maxRunning, running);
    await new Promise<void>((resolve) => pending.push(resolve));
    running--;
    return value;
  };
  const hashing: Hashing = {
    verify: () => slow({ ok: false, needsRehash: false }),
    hash: () => slow('$argon2id$fake'),
  };
  /** Ends the oldest running call (or every one), then lets the promise chains settle. */
  const finish = async (all = false) => {
    do pending.shift()?.();
    while (all && pending.length > 0);
    await settle();
  };
  return { hashing, stats, finish, running: () => running };
}

describe('the bounded password hashing slots', () => {
  it(`N logins at once: never more than max hash, max + queue are served in arrival order, the rest refused at once without a hash (seed ${SEED})`, async () => {
    console.log(`password hashing slots property seed: ${SEED}`);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 0, max: 20 }),
        fc.integer({ min: 1, max: 100 }),
        fc.array(fc.boolean(), { maxLength: 200 }),
        async (max, queue, n, finishOrder) => {
          const c = countingHashing();
          const hasher = new PasswordHasher({
            maxConcurrent: max,
            queue,
            registry: new Registry(),
            hashing: c.hashing,
          });
          const started: number[] = [];
          const outcomes = Array.from({ length: n }, (_, i) =>
            hasher
              .withSlot(async (h) => {
                started.push(i);
                await h.verify('guess', 'stored');
                // a second hash in the same slot (a rehash) keeps the slot, never a second one
                if (i % 3 === 0) await h.hash('guess');
                return 'checked' as const;
              })
              .catch((e: unknown) => e),
          );
          await settle();
          // refused at once: before any hash finished
          const admitted = Math.min(n, max + queue);
          expect(c.stats.calls).toBe(Math.min(n, max));
          for (const step of finishOrder) {
            await c.finish(!step);
            expect(c.running()).toBeLessThanOrEqual(max);
          }
          for (let i = 0; i <= 3 * n && c.running() > 0; i++) await c.finish(true);
          expect(c.running()).toBe(0);
          const results = await Promise.all(outcomes);
          expect(results.filter((r) => r === 'checked')).toHaveLength(admitted);
          const refused = results.filter((r) => r instanceof ApiError);
          expect(refused).toHaveLength(n - admitted);
          for (const r of refused) expect(r).toMatchObject({ code: 'unavailable', status: 503, retryAfterSecs: 1 });
          expect(c.stats.maxRunning).toBeLessThanOrEqual(max);
          // first come, first served; the refused ones are the latecomers
          expect(started).toEqual(Array.from({ length: admitted }, (_, i) => i));
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  }, 60_000);

  it('counts checks, new hashes and refusals on /metrics; a slot lends its functions only while it is held', async () => {
    const registry = new Registry();
    const c = countingHashing();
    const hasher = new PasswordHasher({ maxConcurrent: 1, queue: 0, registry, hashing: c.hashing });
    let leaked: Hashing | null = null;
    const first = hasher.withSlot(async (h) => {
      leaked = h;
      await h.verify('a', 'b');
      return h.hash('a');
    });
    await expect(hasher.withSlot((h) => h.verify('x', 'y'))).rejects.toMatchObject({ code: 'unavailable' });
    await c.finish();
    await c.finish();
    await first;
    await expect(leaked!.verify('late', 'call')).rejects.toThrow('outside its slot');
    const text = await registry.metrics();
    expect(text).toMatch(/^skald_login_password_checks_total 1$/m);
    expect(text).toMatch(/^skald_password_hashes_total 1$/m);
    expect(text).toMatch(/^skald_login_hash_busy_total 1$/m);
    expect(text).toMatch(/^skald_login_hashes_in_flight 0$/m);
    expect(c.stats.calls).toBe(2);
  });

  it('refuses nonsense bounds, and a slot is given back when the work throws', async () => {
    expect(() => new Slots(0, 1)).toThrow('max must be a positive integer');
    expect(() => new Slots(1, -1)).toThrow('queue must be an integer');
    const slots = new Slots(1, 0);
    await expect(slots.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(slots.running).toBe(0);
    const hold = slots.run(() => new Promise((r) => setTimeout(r, 5)));
    await expect(slots.run(() => Promise.resolve(1))).rejects.toBeInstanceOf(SlotsBusy);
    await hold;
    await expect(slots.run(() => Promise.resolve(2))).resolves.toBe(2);
  });
});
