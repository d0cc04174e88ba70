import type { SimRequestLogEntry, SimRequestQuery } from './sim-types';

type Listener = () => void;

interface StoredEntry {
  entry: SimRequestLogEntry;
  rawBody: string;
}

/** Bounded log of chat-completions requests, newest last, with change notification for waiters. */
export class SimRequestLog {
  private readonly stored: StoredEntry[] = [];
  private readonly listeners = new Set<Listener>();
  private nextId = 1;

  constructor(private readonly capacity = 1000) {}

  open(
    fields: Pick<SimRequestLogEntry, 'method' | 'path' | 'headers' | 'authorization' | 'body' | 'stream'>,
    rawBody: string,
  ): SimRequestLogEntry {
    const entry: SimRequestLogEntry = {
      id: this.nextId++,
      ...fields,
      scriptId: null,
      status: 0,
      outcome: 'pending',
      clientAborted: false,
      chunksSent: 0,
      error: null,
      receivedAt: new Date().toISOString(),
      finishedAt: null,
    };
    this.stored.push({ entry, rawBody });
    if (this.stored.length > this.capacity) this.stored.shift();
    this.notify();
    return entry;
  }

  /** Applies a change to an entry and wakes waiters. */
  update(entry: SimRequestLogEntry, change: Partial<SimRequestLogEntry>): void {
    Object.assign(entry, change);
    this.notify();
  }

  list(query: SimRequestQuery = {}): SimRequestLogEntry[] {
    return this.stored
      .filter(
        ({ entry, rawBody }) =>
          (query.sinceId === undefined || entry.id > query.sinceId) &&
          (query.contains === undefined || rawBody.includes(query.contains)),
      )
      .map(({ entry }) => structuredClone(entry));
  }

  clear(): void {
    this.stored.length = 0;
    this.notify();
  }

  /** Resolves with the first entry (a copy) satisfying the predicate, now or after a later change. */
  waitFor(predicate: (entry: SimRequestLogEntry) => boolean, timeoutMs: number): Promise<SimRequestLogEntry> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        const found = this.stored.find(({ entry }) => predicate(entry));
        if (!found) return false;
        cleanup();
        resolve(structuredClone(found.entry));
        return true;
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`llm-sim: no logged request matched within ${timeoutMs} ms`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.listeners.delete(listener);
      };
      const listener: Listener = () => void check();
      this.listeners.add(listener);
      check();
    });
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
