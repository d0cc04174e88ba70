/** Defaults of the short run in `npm test` (the e2e phase has ~5 minutes for it). */
export const SHORT_RUN = { durationS: 120, conversations: 6 };

export interface ChaosRunOptions {
  seed: number;
  durationMs: number;
  conversations: number;
}

/**
 * CHAOS_SEED (default: a fresh one), CHAOS_DURATION_S and CHAOS_CONVERSATIONS (default: the short
 * run); a value that is not a positive integer is refused, naming the variable.
 */
export function chaosOptionsFromEnv(env: NodeJS.ProcessEnv): ChaosRunOptions {
  const int = (name: string, fallback: number, min: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}, got "${raw}"`);
    return n;
  };
  return {
    seed: int('CHAOS_SEED', Math.floor(Math.random() * 2 ** 31), 0),
    durationMs: int('CHAOS_DURATION_S', SHORT_RUN.durationS, 10) * 1000,
    conversations: int('CHAOS_CONVERSATIONS', SHORT_RUN.conversations, 1),
  };
}
