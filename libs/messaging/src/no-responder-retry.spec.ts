import fc from 'fast-check';
import { noResponderDelayMs, NoResponderRetry, RetryClock, retryNoResponders } from './no-responder-retry';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const POLICY: NoResponderRetry = { boundMs: 15_000, baseDelayMs: 100, maxDelayMs: 2_000 };

class NoResponders extends Error {}
const isNoResponders = (e: unknown): boolean => e instanceof NoResponders;

/** A clock whose sleeps advance time at once, recording each wait. */
function fakeClock(random: () => number = () => 0.5): RetryClock & { t: number; waits: number[] } {
  const c = {
    t: 0,
    waits: [] as number[],
    now: () => c.t,
    random,
    sleep: async (ms: number, signal?: AbortSignal) => {
      if (signal?.aborted) return;
      c.waits.push(ms);
      c.t += ms;
    },
  };
  return c;
}

/** A service that finds no responder until `upAt` (clock time), then answers `ok`. */
function serviceUpAt(clock: { t: number }, upAt: number) {
  const attempts: number[] = [];
  return {
    attempts,
    send: async (): Promise<string> => {
      attempts.push(clock.t);
      if (clock.t < upAt) throw new NoResponders('no responders');
      return 'ok';
    },
  };
}

describe('retryNoResponders: a request that found no responder is tried again within the bound', () => {
  beforeAll(() => console.log(`no-responder-retry: seed=${SEED} — reproduce with FC_SEED=${SEED}`));

  it('a service back within the bound answers: the call succeeds; one that stays away fails at the bound, not later', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 30_000 }), // when the service is back
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), // the jitter's draws
        async (upAt, r) => {
          const clock = fakeClock(() => r);
          const svc = serviceUpAt(clock, upAt);
          const out = await retryNoResponders(svc.send, isNoResponders, POLICY, { clock }).catch((e: unknown) => e);
          if (upAt <= POLICY.boundMs) {
            expect(out).toBe('ok');
            // Found within one capped wait of its return.
            expect(clock.t - upAt).toBeLessThanOrEqual(POLICY.maxDelayMs);
          } else {
            expect(out).toBeInstanceOf(NoResponders);
            // The last attempt is made at the bound exactly: never past it.
            expect(svc.attempts[svc.attempts.length - 1]).toBe(POLICY.boundMs);
          }
          // Each wait is within [half, all] of the capped exponential delay (or what is left of the bound).
          svc.attempts.slice(1).forEach((at, i) => {
            const wait = at - svc.attempts[i];
            const capped = Math.min(POLICY.maxDelayMs, POLICY.baseDelayMs * 2 ** i);
            expect(wait).toBeLessThanOrEqual(capped);
            if (at < POLICY.boundMs) expect(wait).toBeGreaterThanOrEqual(Math.floor(capped / 2));
          });
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('the backoff doubles from the base, is capped, and its jitter spreads callers over the upper half', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => noResponderDelayMs(POLICY, n, 60_000, 0))).toEqual([
      50, 100, 200, 400, 800, 1000, 1000,
    ]);
    expect([1, 2, 5, 6, 40].map((n) => noResponderDelayMs(POLICY, n, 60_000, 0.999999))).toEqual([
      100, 200, 1600, 2000, 2000,
    ]);
    expect(noResponderDelayMs(POLICY, 9, 300, 0.5)).toBe(300);
  });

  it('only "no responders" is tried again: any other failure (the request may have been delivered) stands at once', async () => {
    const clock = fakeClock();
    let n = 0;
    const timeout = new Error('timed out');
    await expect(
      retryNoResponders(
        async () => {
          n++;
          throw timeout;
        },
        isNoResponders,
        POLICY,
        { clock },
      ),
    ).rejects.toBe(timeout);
    expect(n).toBe(1);
    expect(clock.waits).toEqual([]);
  });

  it('a bound of 0 never retries; an aborted signal stops the retry with the last error', async () => {
    const clock = fakeClock();
    const svc = serviceUpAt(clock, 1_000);
    await expect(
      retryNoResponders(svc.send, isNoResponders, { ...POLICY, boundMs: 0 }, { clock }),
    ).rejects.toBeInstanceOf(NoResponders);
    expect(svc.attempts).toEqual([0]);

    const stop = new AbortController();
    const clock2 = fakeClock();
    const svc2 = serviceUpAt(clock2, 10_000);
    const run = retryNoResponders(svc2.send, isNoResponders, POLICY, {
      clock: clock2,
      signal: stop.signal,
      onRetry: (attempts) => {
        if (attempts === 3) stop.abort();
      },
    });
    await expect(run).rejects.toBeInstanceOf(NoResponders);
    expect(svc2.attempts).toHaveLength(3);
  });
});
