import type { SimRequestLogEntry, SimRequestQuery } from './sim-types';

type Listener = () => void;

interface StoredEntry {
  entry: SimRequestLogEntry;
  rawBody: string;
  bytes: number;
}

/** An entry's fields as the handler knows them; `body` is not among them (see `open`). */
export type SimRequestLogFields = Pick<SimRequestLogEntry, 'method' | 'path' | 'headers' | 'authorization' | 'stream'>;

/** What the log keeps by default: the newest 1,000 requests, at most 16 MiB of their bodies. */
export const SIM_LOG_CAPACITY = 1000;
export const SIM_LOG_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Bounded log of chat-completions requests, newest last, with change notification for waiters.
 * Bounded by count and by the bytes of the bodies kept (each is kept raw and parsed): a long
 * conversation's requests, hundreds of KB each, would otherwise fill the simulator's heap, and every
 * garbage collection would walk them — a cost that grows with the conversation and belongs to the
 * harness, not to the system under test. The newest request is kept whatever its size.
 *
 * Only the raw text is kept: an entry's `body` is parsed from it when first read (`list`, a waiter's
 * predicate) and kept from then on. A run that never reads the log (the benchmarks) keeps one flat
 * string per request and no parsed object graph, which every young-generation collection would
 * otherwise copy into the old generation and every full one walk.
 */
export class SimRequestLog {
  private readonly stored: StoredEntry[] = [];
  private readonly listeners = new Set<Listener>();
  private nextId = 1;
  private bytes = 0;

  constructor(
    private readonly capacity = SIM_LOG_CAPACITY,
    private readonly maxBytes = SIM_LOG_MAX_BYTES,
  ) {}

  open(fields: SimRequestLogFields, rawBody: string): SimRequestLogEntry {
    const entry: SimRequestLogEntry = {
      id: this.nextId++,
      ...fields,
      body: null,
      scriptId: null,
      status: 0,
      outcome: 'pending',
      clientAborted: false,
      chunksSent: 0,
      error: null,
      receivedAt: new Date().toISOString(),
      finishedAt: null,
    };
    lazyBody(entry, rawBody);
    const bytes = Buffer.byteLength(rawBody);
    this.stored.push({ entry, rawBody, bytes });
    this.bytes += bytes;
    // Oldest first; the newest is always kept (the loop ends: each pass shrinks the log).
    while (this.stored.length > 1 && (this.stored.length > this.capacity || this.bytes > this.maxBytes)) {
      this.bytes -= this.stored.shift()!.bytes;
    }
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
    this.bytes = 0;
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

/** `entry.body`: the JSON of `rawBody` (null when it is not JSON), parsed on first read, then a plain value. */
function lazyBody(entry: SimRequestLogEntry, rawBody: string): void {
  Object.defineProperty(entry, 'body', {
    enumerable: true,
    configurable: true,
    get(): unknown {
      let value: unknown = null;
      try {
        value = JSON.parse(rawBody) as unknown;
      } catch {
        // not JSON: null, as before
      }
      Object.defineProperty(entry, 'body', { value, enumerable: true, configurable: true, writable: true });
      return value;
    },
    set(value: unknown): void {
      Object.defineProperty(entry, 'body', { value, enumerable: true, configurable: true, writable: true });
    },
  });
}
