/** How big and how old a `PerUserCache` may grow. */
export interface PerUserCacheOptions {
  /** Users kept at most; the least recently used one goes first. */
  maxUsers: number;
  /** A value is answered for at most this long after its read started (0: nothing is kept). */
  maxAgeMs: number;
  now?: () => number;
}

interface Entry<V> {
  value: V;
  /** When the read that produced it started (the value is at least this fresh). */
  readAt: number;
}

interface Flight<V> {
  done: Promise<V>;
  /** Set by an invalidation while the read runs: its answer may predate the change, so it is not kept. */
  stale: boolean;
}

/**
 * One value per user, read from the database on a miss and kept until the user's data changes
 * (`invalidate`, on the write itself or its doorbell), a doorbell may have been missed (`clear`, on
 * a lost connection), it is `maxAgeMs` old (what a doorbell missed any other way can cost), or
 * `maxUsers` other users were used since. Concurrent misses of one user share one read; a read that
 * an invalidation overtook answers its caller but is not kept. Values are shared between callers:
 * treat them as read-only.
 */
export class PerUserCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly flights = new Map<string, Flight<V>>();
  private readonly now: () => number;

  constructor(private readonly options: PerUserCacheOptions) {
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  get(userId: string, read: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(userId);
    if (hit) {
      this.entries.delete(userId);
      if (this.now() - hit.readAt < this.options.maxAgeMs) {
        this.entries.set(userId, hit); // most recently used last
        return Promise.resolve(hit.value);
      }
    }
    const flying = this.flights.get(userId);
    if (flying) return flying.done;
    const readAt = this.now();
    const flight: Flight<V> = { done: Promise.resolve(undefined as V), stale: false };
    flight.done = (async () => {
      try {
        const value = await read();
        if (!flight.stale) this.keep(userId, { value, readAt });
        return value;
      } finally {
        if (this.flights.get(userId) === flight) this.flights.delete(userId);
      }
    })();
    this.flights.set(userId, flight);
    return flight.done;
  }

  /** The user's data changed: forget it, and do not keep what a read in flight answers. */
  invalidate(userId: string): void {
    this.entries.delete(userId);
    const flight = this.flights.get(userId);
    if (flight) {
      flight.stale = true;
      this.flights.delete(userId);
    }
  }

  /** Anything may have changed: forget everything, reads in flight included. */
  clear(): void {
    this.entries.clear();
    for (const flight of this.flights.values()) flight.stale = true;
    this.flights.clear();
  }

  private keep(userId: string, entry: Entry<V>): void {
    if (this.options.maxAgeMs <= 0 || this.options.maxUsers <= 0) return;
    this.entries.delete(userId);
    this.entries.set(userId, entry);
    // bounded: at most one over the cap at a time, so this removes one
    while (this.entries.size > this.options.maxUsers) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }
}
