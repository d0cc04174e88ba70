/**
 * The retry of a request that found no responder. NATS answers "no responders" when no client is
 * subscribed to the subject (a service restarting, a rolling upgrade between two replicas):
 * nothing was delivered, so sending the request again can never run anything twice. It is sent
 * again after an exponential backoff with jitter, capped, for at most `boundMs` from the first
 * attempt; past the bound (or once `signal` aborts) the last "no responders" error stands.
 */
export interface NoResponderRetry {
  /** How long, from the first attempt, a request that finds no responder is tried again (0: never). */
  boundMs: number;
  /** The first wait; doubled after each further attempt. */
  baseDelayMs: number;
  /** The longest single wait. */
  maxDelayMs: number;
}

/** The backoff's shape; the bound is the app's (`SKALD_NO_RESPONDER_RETRY_MS` where set, else no retry). */
export const NO_RESPONDER_BACKOFF = { baseDelayMs: 100, maxDelayMs: 2_000 } as const;

/** What the retry needs of time and chance (the unit spec fakes them). */
export interface RetryClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Uniform in [0, 1). */
  random(): number;
}

export const systemClock: RetryClock = {
  now: () => Date.now(),
  random: () => Math.random(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted || ms <= 0) return resolve();
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
    }),
};

/**
 * The wait before attempt `attempt + 1` (`attempt` ≥ 1 attempts made): the capped exponential
 * delay, of which a random half is jitter (so that callers who found the same gap do not come
 * back in step), and never past the bound.
 */
export function noResponderDelayMs(policy: NoResponderRetry, attempt: number, leftMs: number, random: number): number {
  const capped = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  return Math.max(0, Math.min(leftMs, Math.round(capped / 2 + (capped / 2) * random)));
}

/**
 * Runs `attempt` and, while it fails with an error `isNoResponder` recognises, again after the
 * backoff, until it succeeds, fails otherwise, the bound has passed or `signal` aborted. The
 * result is the last attempt's; `attempts` counts them all.
 */
export async function retryNoResponders<T>(
  attempt: () => Promise<T>,
  isNoResponder: (err: unknown) => boolean,
  policy: NoResponderRetry,
  opts: { signal?: AbortSignal; clock?: RetryClock; onRetry?: (attempts: number, waitMs: number) => void } = {},
): Promise<T> {
  const clock = opts.clock ?? systemClock;
  const deadline = clock.now() + Math.max(0, policy.boundMs);
  for (let attempts = 1; ; attempts++) {
    try {
      return await attempt();
    } catch (err) {
      const left = deadline - clock.now();
      if (!isNoResponder(err) || left <= 0 || opts.signal?.aborted) throw err;
      const wait = noResponderDelayMs(policy, attempts, left, clock.random());
      opts.onRetry?.(attempts, wait);
      await clock.sleep(wait, opts.signal);
      if (opts.signal?.aborted) throw err;
    }
  }
}
