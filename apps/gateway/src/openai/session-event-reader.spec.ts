import type { SessionEvent } from '@skald/contracts';
import { sessionEvents, type EventPage, type EventReaderPorts, type ReadItem } from './session-event-reader';

const S = '00000000-0000-4000-8000-000000000001';
const event = (seq: number): SessionEvent => ({ type: 'file_changed', path: `/workspace/${seq}`, session_id: S, seq });

/** A session whose events are stored as the test says; doorbells ring only when the test says. */
function fakeSession(pageSize = 2) {
  const stored: SessionEvent[] = [];
  let ring: (() => void) | null = null;
  let sleeps = 0;
  const ports: EventReaderPorts = {
    read: (after) => {
      const rest = stored.filter((e) => e.seq > after);
      const events = rest.slice(0, pageSize);
      const has_more = rest.length > pageSize;
      const last = has_more ? events[events.length - 1].seq : (stored[stored.length - 1]?.seq ?? 0);
      return Promise.resolve<EventPage>({ events, last_seq: last, running: true, has_more });
    },
    doorbell: (r) => {
      ring = r;
      return () => {
        ring = null;
      };
    },
    sleep: (_ms, wakeUp) =>
      new Promise((resolve) => {
        sleeps++;
        wakeUp(resolve);
        setImmediate(resolve); // a poll interval passes at once here
      }),
  };
  return {
    ports,
    store: (seq: number) => stored.push(event(seq)),
    ring: () => ring?.(),
    get sleeps() {
      return sleeps;
    },
    get subscribed() {
      return ring !== null;
    },
  };
}

async function take(gen: AsyncGenerator<ReadItem>, n: number): Promise<number[]> {
  const seqs: number[] = [];
  for await (const item of gen) {
    if (item.kind === 'event') seqs.push(item.event.seq);
    if (seqs.length >= n) break;
  }
  return seqs;
}

describe('reading a session’s events from the durable source', () => {
  it('yields every stored event after the cursor once, in order, page by page, without a doorbell', async () => {
    const s = fakeSession();
    for (let i = 1; i <= 5; i++) s.store(i);
    const ctl = new AbortController();
    const gen = sessionEvents(s.ports, 1, ctl.signal, 10);
    const seen = take(gen, 6);
    // Stored later, and NATS never announced it (a dropped message): the poll finds it.
    setTimeout(() => s.store(6), 5);
    setTimeout(() => s.store(7), 10);
    expect(await seen).toEqual([2, 3, 4, 5, 6, 7]);
    expect(s.subscribed).toBe(false);
  });

  it('stops reading once aborted, and lets go of its doorbell', async () => {
    const s = fakeSession();
    const ctl = new AbortController();
    const gen = sessionEvents(s.ports, 0, ctl.signal, 10);
    const first = await gen.next();
    expect(first.value).toEqual({ kind: 'idle', running: true, waiting: undefined });
    expect(s.subscribed).toBe(true);
    ctl.abort();
    s.ring();
    const rest: ReadItem[] = [];
    for await (const item of gen) rest.push(item);
    expect(rest.filter((i) => i.kind === 'event')).toEqual([]);
    expect(s.subscribed).toBe(false);
  });
});
