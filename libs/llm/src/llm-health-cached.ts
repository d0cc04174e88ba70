import type { LlmHealth, LlmHealthStore } from './llm-health';

export interface CachedHealthOptions {
  /**
   * A read is answered from memory while this process's last read of the shared store started at
   * most this long ago: a change another replica writes is seen within it. 0 reads every time.
   * Default 1 s.
   */
  maxAgeMs?: number;
  now?: () => number;
}

interface Cached {
  health: LlmHealth;
  /** When the shared read it came from started (ms). */
  readAt: number;
}

interface Inflight {
  key: string;
  startedAt: number;
  generations: number[];
  promise: Promise<Map<string, LlmHealth>>;
}

/**
 * The health of the shared store, read at most once per `maxAgeMs` by this process. The worker
 * asks for health before every model call (to pick the client); the shared store (Redis) is
 * written by every worker replica, and a record expires by its time to live; nothing pushes a
 * change, so a replica sees another's writes when its cached read is older than `maxAgeMs`.
 *
 * Its own writes are seen at once: a write made through this store drops the client's cached
 * health, and a read that was in flight when a write started is not kept for that client (a
 * generation per client, bumped before and after each write). Concurrent reads of the same
 * clients share one shared read when no write of theirs came in between.
 */
export class CachedLlmHealthStore implements LlmHealthStore {
  private readonly cached = new Map<string, Cached>();
  private readonly generations = new Map<string, number>();
  private readonly maxAgeMs: number;
  private readonly now: () => number;
  private inflight: Inflight | null = null;

  constructor(
    private readonly shared: LlmHealthStore,
    options: CachedHealthOptions = {},
  ) {
    this.maxAgeMs = options.maxAgeMs ?? 1_000;
    this.now = options.now ?? Date.now;
  }

  /** The wrapped store's (a read answered from memory is no news about the shared store). */
  mode(): 'shared' | 'local' {
    return this.shared.mode?.() ?? 'shared';
  }

  recordSuccess(clientName: string): Promise<void> {
    return this.written(clientName, () => this.shared.recordSuccess(clientName));
  }

  recordFailure(clientName: string, error: string): Promise<void> {
    return this.written(clientName, () => this.shared.recordFailure(clientName, error));
  }

  /** From memory when every client's cached health is fresh enough, unless `fresh` is asked for. */
  async read(clientNames: readonly string[], options?: { fresh?: boolean }): Promise<Map<string, LlmHealth>> {
    const at = this.now();
    const fresh = (c: Cached | undefined): c is Cached =>
      c !== undefined && at - c.readAt < this.maxAgeMs && at >= c.readAt;
    const hits = clientNames.map((name) => this.cached.get(name));
    if (!options?.fresh && hits.every(fresh))
      return new Map(clientNames.map((name, i) => [name, { ...hits[i].health }]));

    const key = clientNames.join('\n');
    const generations = clientNames.map((name) => this.generation(name));
    const joinable = this.inflight;
    if (
      !options?.fresh &&
      joinable &&
      joinable.key === key &&
      at - joinable.startedAt < this.maxAgeMs &&
      joinable.generations.every((g, i) => g === generations[i])
    )
      return copy(await joinable.promise);

    const promise = this.shared.read(clientNames);
    const own: Inflight = { key, startedAt: at, generations, promise };
    this.inflight = own;
    try {
      const health = await promise;
      clientNames.forEach((name, i) => {
        const h = health.get(name);
        if (h && this.generation(name) === generations[i]) this.cached.set(name, { health: { ...h }, readAt: at });
      });
      return copy(health);
    } finally {
      if (this.inflight === own) this.inflight = null;
    }
  }

  private async written(clientName: string, write: () => Promise<void>): Promise<void> {
    this.bump(clientName);
    try {
      await write();
    } finally {
      this.bump(clientName);
    }
  }

  private bump(clientName: string): void {
    this.generations.set(clientName, this.generation(clientName) + 1);
    this.cached.delete(clientName);
  }

  private generation(clientName: string): number {
    return this.generations.get(clientName) ?? 0;
  }
}

function copy(health: Map<string, LlmHealth>): Map<string, LlmHealth> {
  return new Map([...health].map(([name, h]) => [name, { ...h }]));
}
