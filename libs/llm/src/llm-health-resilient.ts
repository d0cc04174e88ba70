import { InMemoryLlmHealthStore, type LlmHealth, type LlmHealthStore } from './llm-health';

export interface ResilientHealthOptions {
  /** Longest wait for the shared store on any operation. Default 500 ms. */
  timeoutMs?: number;
  /** After a failure, how long to use local health only before trying the shared store again. Default 5 s. */
  retryAfterMs?: number;
  /** Told when the shared store becomes unusable (with why) and when it is back. */
  onModeChange?: (mode: 'shared' | 'local', reason: string | null) => void;
  now?: () => number;
  /** The local fallback (default: a fresh in-memory store). */
  local?: LlmHealthStore;
}

class SharedTimeout extends Error {
  constructor(ms: number) {
    super(`the shared health store did not answer within ${ms} ms`);
  }
}

/**
 * Health shared across replicas (e.g. Redis) that never fails a caller: every outcome is recorded
 * locally too, and while the shared store is down or slow, reads and writes use the local record
 * only (trying the shared store again after `retryAfterMs`). A turn never fails because health
 * could not be stored; it is merely judged on this replica's own experience meanwhile.
 */
export class ResilientLlmHealthStore implements LlmHealthStore {
  private readonly local: LlmHealthStore;
  private readonly timeoutMs: number;
  private readonly retryAfterMs: number;
  private readonly now: () => number;
  private downUntil = 0;
  private currentMode: 'shared' | 'local' = 'shared';

  constructor(
    private readonly shared: LlmHealthStore,
    private readonly options: ResilientHealthOptions = {},
  ) {
    this.local = options.local ?? new InMemoryLlmHealthStore();
    this.timeoutMs = options.timeoutMs ?? 500;
    this.retryAfterMs = options.retryAfterMs ?? 5_000;
    this.now = options.now ?? Date.now;
  }

  /** `shared` while the shared store answers, `local` while this replica judges on its own. */
  mode(): 'shared' | 'local' {
    return this.currentMode;
  }

  async recordSuccess(clientName: string): Promise<void> {
    await this.local.recordSuccess(clientName);
    await this.tryShared(() => this.shared.recordSuccess(clientName));
  }

  async recordFailure(clientName: string, error: string): Promise<void> {
    await this.local.recordFailure(clientName, error);
    await this.tryShared(() => this.shared.recordFailure(clientName, error));
  }

  async read(clientNames: readonly string[]): Promise<Map<string, LlmHealth>> {
    const shared = await this.tryShared(() => this.shared.read(clientNames));
    return shared ?? this.local.read(clientNames);
  }

  private async tryShared<T>(op: () => Promise<T>): Promise<T | null> {
    if (this.now() < this.downUntil) return null;
    let timer: NodeJS.Timeout | undefined;
    try {
      const result = await Promise.race([
        op(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new SharedTimeout(this.timeoutMs)), this.timeoutMs);
          timer.unref?.();
        }),
      ]);
      this.setMode('shared', null);
      return result;
    } catch (err) {
      this.downUntil = this.now() + this.retryAfterMs;
      this.setMode('local', err instanceof Error ? err.message : String(err));
      return null;
    } finally {
      clearTimeout(timer);
    }
  }

  private setMode(mode: 'shared' | 'local', reason: string | null): void {
    if (mode === this.currentMode) return;
    this.currentMode = mode;
    this.options.onModeChange?.(mode, reason);
  }
}
