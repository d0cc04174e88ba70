/**
 * Abort signals of running calls by tool call id. A cancel that arrives before its call (the two
 * travel on different subjects) is remembered for a while, so the call then ends cancelled at once.
 */
export class Cancellations {
  private readonly running = new Map<string, AbortController>();
  private readonly early = new Map<string, number>();

  constructor(
    private readonly rememberMs = 10 * 60_000,
    private readonly maxRemembered = 10_000,
  ) {}

  begin(id: string): AbortSignal {
    const controller = new AbortController();
    this.running.set(id, controller);
    const at = this.early.get(id);
    if (at !== undefined) {
      this.early.delete(id);
      if (Date.now() - at < this.rememberMs) controller.abort();
    }
    return controller.signal;
  }

  end(id: string): void {
    this.running.delete(id);
  }

  /** Returns whether a running call was aborted. */
  cancel(id: string): boolean {
    const controller = this.running.get(id);
    if (controller) {
      controller.abort();
      return true;
    }
    this.early.set(id, Date.now());
    if (this.early.size > this.maxRemembered) {
      const oldest = this.early.keys().next().value;
      if (oldest !== undefined) this.early.delete(oldest);
    }
    return false;
  }

  get runningCount(): number {
    return this.running.size;
  }
}
