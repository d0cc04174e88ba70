import type { SessionEvent, TurnWaiting } from '@skald/contracts';

/** One page of a session's stored events after a seq (the `session.replay` answer). */
export interface EventPage {
  events: SessionEvent[];
  last_seq: number;
  running: boolean;
  waiting?: TurnWaiting;
  has_more?: boolean;
}

export interface EventReaderPorts {
  /** Reads the stored events after `afterSeq` (the durable source the WS resumes from). */
  read(afterSeq: number): Promise<EventPage>;
  /** Calls `ring` whenever NATS announces a new event of the session; returns the unsubscribe. */
  doorbell(ring: () => void): () => void;
  /** Waits at most `ms` or until `wake` is called (a doorbell); resolves either way. */
  sleep(ms: number, wakeUp: (wake: () => void) => void): Promise<void>;
}

/** What the reader hands on: a stored event, or the session's state once everything stored was read. */
export type ReadItem =
  { kind: 'event'; event: SessionEvent } | { kind: 'idle'; running: boolean; waiting?: TurnWaiting };

/**
 * A session's events after a seq, in seq order, each once and none skipped: read from the events
 * table (never from the NATS message, which is only the doorbell), so an announcement NATS drops
 * costs at most one `pollMs`. After each read that reached the end it yields the session's state
 * (`idle`), so the caller can tell a finished or parked turn. Ends when `signal` aborts.
 */
export async function* sessionEvents(
  ports: EventReaderPorts,
  afterSeq: number,
  signal: AbortSignal,
  pollMs: number,
): AsyncGenerator<ReadItem> {
  let cursor = afterSeq;
  let rung = false;
  let wake: (() => void) | null = null;
  const unsubscribe = ports.doorbell(() => {
    rung = true;
    wake?.();
  });
  const onAbort = (): void => wake?.();
  signal.addEventListener('abort', onAbort);
  try {
    while (!signal.aborted) {
      rung = false;
      const page = await ports.read(cursor);
      for (const event of page.events) {
        if (event.seq <= cursor) continue;
        // A gap is never skipped: the page is read again from the cursor.
        if (event.seq !== cursor + 1) break;
        cursor = event.seq;
        yield { kind: 'event', event };
        if (signal.aborted) return;
      }
      if (page.has_more) continue;
      if (cursor >= page.last_seq) yield { kind: 'idle', running: page.running, waiting: page.waiting };
      if (rung || signal.aborted) continue;
      await ports.sleep(pollMs, (w) => {
        wake = w;
      });
      wake = null;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    unsubscribe();
  }
}
