/** A tool call id reused for a different call (another user or another tool). */
export class CallConflict extends Error {
  readonly code = 'conflict';
  constructor(toolCallId: string) {
    super(`tool call ${toolCallId} was already run as a different call`);
    this.name = 'CallConflict';
  }
}

export interface CallResultsLimits {
  /** Finished results kept. */
  maxEntries: number;
  /** Total size of the finished results kept (as measured by `sizeOf`). */
  maxBytes: number;
}

/**
 * Results of tool calls keyed by tool call id, so that a duplicate `tools.exec` (a resumed worker, a
 * redelivered request) gets the result of the call instead of running it twice. A duplicate that
 * arrives while the first still runs waits for it. Finished results are kept in an LRU bounded by
 * count and size. Memory only: a restart of this runner forgets them (durable results are a later
 * issue; until then the session worker's restart hints decide what re-runs).
 */
export class CallResults<T> {
  private readonly finished = new Map<string, { owner: string; value: T; size: number }>();
  private readonly running = new Map<string, { owner: string; promise: Promise<T> }>();
  private bytes = 0;

  constructor(
    private readonly limits: CallResultsLimits,
    private readonly sizeOf: (value: T) => number,
  ) {}

  /**
   * `owner` identifies the call (user + tool); a different owner for a known id is a conflict.
   * `keep` says whether a result is kept for duplicates (a result that did nothing may be re-run).
   */
  async run(
    id: string,
    owner: string,
    work: () => Promise<T>,
    keep: (value: T) => boolean = () => true,
  ): Promise<{ value: T; replayed: boolean }> {
    const done = this.finished.get(id);
    if (done) {
      if (done.owner !== owner) throw new CallConflict(id);
      this.finished.delete(id);
      this.finished.set(id, done);
      return { value: done.value, replayed: true };
    }
    const inflight = this.running.get(id);
    if (inflight) {
      if (inflight.owner !== owner) throw new CallConflict(id);
      return { value: await inflight.promise, replayed: true };
    }
    const promise = work();
    this.running.set(id, { owner, promise });
    try {
      const value = await promise;
      if (keep(value)) this.remember(id, owner, value);
      return { value, replayed: false };
    } finally {
      this.running.delete(id);
    }
  }

  get size(): number {
    return this.finished.size;
  }

  get runningCount(): number {
    return this.running.size;
  }

  private remember(id: string, owner: string, value: T): void {
    const size = this.sizeOf(value);
    this.finished.set(id, { owner, value, size });
    this.bytes += size;
    for (const [key, entry] of this.finished) {
      if (this.finished.size <= this.limits.maxEntries && this.bytes <= this.limits.maxBytes) break;
      if (key === id) continue;
      this.finished.delete(key);
      this.bytes -= entry.size;
    }
  }
}
