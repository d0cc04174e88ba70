import type { LlmHealth, LlmHealthStore } from './llm-health';

export interface ThrottledHealthOptions {
  /**
   * A success is written at least this often per client even when nothing changed, so that
   * `last_success_at` is at most this old and the shared record's time to live keeps being renewed.
   * Default 10 s.
   */
  refreshMs?: number;
  now?: () => number;
}

interface Known {
  /** The shared record, as last read or written by this process, had no failure and no error. */
  clean: boolean;
  /** When this process last wrote a success of the client (ms), or null. */
  successWrittenAt: number | null;
  /** Bumped by every failure recorded here: a read that started before it does not mark the record clean. */
  failures: number;
}

/**
 * A shared health store written only when a write changes something: a failure is always written;
 * a success only when the shared record was not clean as last seen (read before the call, or a
 * failure recorded here since), or when this process's last written success of the client is older
 * than `refreshMs`. Every LLM call used to write its success (a Redis MULTI of four commands); with
 * a healthy client that is now one write per client per `refreshMs`. Health reads pass through.
 *
 * What it gives up: `last_success_at` may be up to `refreshMs` old; a success whose last read saw a
 * clean record does not reset failures another replica recorded during the call (the next call's
 * read sees them, and its success resets them).
 */
export class ThrottledLlmHealthStore implements LlmHealthStore {
  private readonly known = new Map<string, Known>();
  private readonly refreshMs: number;
  private readonly now: () => number;

  constructor(
    private readonly shared: LlmHealthStore,
    options: ThrottledHealthOptions = {},
  ) {
    this.refreshMs = options.refreshMs ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** The wrapped store's: a skipped write is no news about the shared store's reachability. */
  mode(): 'shared' | 'local' {
    return this.shared.mode?.() ?? 'shared';
  }

  async recordSuccess(clientName: string): Promise<void> {
    const k = this.entry(clientName);
    const at = this.now();
    if (k.clean && k.successWrittenAt !== null && at - k.successWrittenAt < this.refreshMs) return;
    const failures = k.failures;
    await this.shared.recordSuccess(clientName);
    k.successWrittenAt = at;
    // A failure recorded while this success was being written came after it: the record is not clean.
    if (k.failures === failures) k.clean = true;
  }

  async recordFailure(clientName: string, error: string): Promise<void> {
    const k = this.entry(clientName);
    k.clean = false;
    k.failures++;
    await this.shared.recordFailure(clientName, error);
  }

  async read(clientNames: readonly string[], options?: { fresh?: boolean }): Promise<Map<string, LlmHealth>> {
    const before = clientNames.map((n) => this.entry(n).failures);
    const health = await this.shared.read(clientNames, options);
    clientNames.forEach((name, i) => {
      const k = this.entry(name);
      if (k.failures !== before[i]) return;
      const h = health.get(name);
      k.clean = !h || (h.consecutiveFailures === 0 && h.lastError === null);
    });
    return health;
  }

  private entry(clientName: string): Known {
    let k = this.known.get(clientName);
    if (!k) {
      k = { clean: false, successWrittenAt: null, failures: 0 };
      this.known.set(clientName, k);
    }
    return k;
  }
}
