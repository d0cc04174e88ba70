/**
 * The same-client retry policy of a round's model call: a retriable error is tried again on the
 * same client after a backoff (the provider's `Retry-After` when it gave one, else exponential),
 * at most `triesPerClient` times and `maxWaitMs` of waiting in all; then the next client.
 */

export interface LlmRetryPolicy {
  /** Tries on one client, the first included (1: no retry, straight to the next client). */
  triesPerClient: number;
  /** Waiting one client's retries may add up to, in ms; a longer `Retry-After` moves on at once. */
  maxWaitMs: number;
  /** The first backoff without a `Retry-After`; doubled for each further retry. */
  baseDelayMs: number;
}

export const DEFAULT_LLM_RETRY: LlmRetryPolicy = { triesPerClient: 3, maxWaitMs: 60_000, baseDelayMs: 1_000 };

/**
 * The wait before the next try on the same client after `triesSoFar` failed tries that already
 * waited `waitedMs`, or null when the client's tries or its wait budget are spent.
 */
export function retryDelayMs(
  policy: LlmRetryPolicy,
  triesSoFar: number,
  waitedMs: number,
  retryAfterMs?: number,
): number | null {
  if (triesSoFar >= policy.triesPerClient) return null;
  const backoff = Math.max(0, policy.baseDelayMs) * 2 ** Math.max(0, triesSoFar - 1);
  const delay = retryAfterMs !== undefined && Number.isFinite(retryAfterMs) ? Math.max(0, retryAfterMs) : backoff;
  return waitedMs + delay > policy.maxWaitMs ? null : delay;
}

/** Resolves after `ms`, or as soon as `signal` aborts (the caller checks `signal.aborted`). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
