/** Health of LLM clients, from consecutive failures. The in-memory store is one process's view; the session worker shares health through Redis (see ResilientLlmHealthStore). */

export type LlmHealthState = 'healthy' | 'degraded' | 'down';

export interface LlmHealth {
  state: LlmHealthState;
  consecutiveFailures: number;
  /** ISO timestamps. */
  lastSuccessAt: string | null;
  lastFailureAt: string | null;
  /** Short description of the last failure (no secrets), null after a success. */
  lastError: string | null;
}

export interface LlmHealthStore {
  recordSuccess(clientName: string): Promise<void>;
  recordFailure(clientName: string, error: string): Promise<void>;
  /**
   * Health of each named client; a client never seen is healthy. `fresh`: not from a cache of
   * recent reads (`CachedLlmHealthStore`), for views a person reads (`GET /api/llm/clients`).
   */
  read(clientNames: readonly string[], options?: { fresh?: boolean }): Promise<Map<string, LlmHealth>>;
  /** `shared` when the health is that of every replica, `local` when it is this process's only. */
  mode?(): 'shared' | 'local';
}

export const DEGRADED_AFTER_FAILURES = 3;
export const DOWN_AFTER_FAILURES = 5;

/** Degraded after 3 consecutive failures, down after 5; any success resets the count. */
export function healthStateFor(consecutiveFailures: number): LlmHealthState {
  if (consecutiveFailures >= DOWN_AFTER_FAILURES) return 'down';
  if (consecutiveFailures >= DEGRADED_AFTER_FAILURES) return 'degraded';
  return 'healthy';
}

export function initialHealth(): LlmHealth {
  return { state: 'healthy', consecutiveFailures: 0, lastSuccessAt: null, lastFailureAt: null, lastError: null };
}

export class InMemoryLlmHealthStore implements LlmHealthStore {
  private readonly health = new Map<string, LlmHealth>();

  constructor(private readonly now: () => Date = () => new Date()) {}

  recordSuccess(clientName: string): Promise<void> {
    const previous = this.health.get(clientName) ?? initialHealth();
    this.health.set(clientName, {
      ...previous,
      state: 'healthy',
      consecutiveFailures: 0,
      lastSuccessAt: this.now().toISOString(),
      lastError: null,
    });
    return Promise.resolve();
  }

  recordFailure(clientName: string, error: string): Promise<void> {
    const previous = this.health.get(clientName) ?? initialHealth();
    const consecutiveFailures = previous.consecutiveFailures + 1;
    this.health.set(clientName, {
      ...previous,
      state: healthStateFor(consecutiveFailures),
      consecutiveFailures,
      lastFailureAt: this.now().toISOString(),
      lastError: error,
    });
    return Promise.resolve();
  }

  read(clientNames: readonly string[]): Promise<Map<string, LlmHealth>> {
    return Promise.resolve(
      new Map(clientNames.map((name) => [name, { ...(this.health.get(name) ?? initialHealth()) }])),
    );
  }
}
