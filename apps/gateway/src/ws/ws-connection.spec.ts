import fc from 'fast-check';
import WebSocket from 'ws';
import type { SessionEvent } from '@skald/contracts';
import type { Principal } from '../auth/auth.service';
import { ReplayPage, WsConnection } from './ws-connection';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const S1 = '00000000-0000-4000-8000-000000000001';
const S2 = '00000000-0000-4000-8000-000000000002';

type Frame = { type: string; seq?: number; running?: boolean; session_id?: string };

function event(seq: number, sessionId = S1, type = 'thinking'): SessionEvent {
  return { type, message_id: 'm', content: `e${seq}`, session_id: sessionId, seq } as unknown as SessionEvent;
}

/** The events table of a few sessions, read a page at a time like `session.replay`. */
class FakeEvents {
  readonly log: Array<number | undefined> = [];
  readonly stored = new Map<string, SessionEvent[]>();
  running = new Map<string, boolean>();
  failing = false;
  /** Reads that fail before the next one succeeds (no session worker answers yet). */
  failNext = 0;
  /** Sessions the caller may not read (another user's, or unknown): `not_found`. */
  readonly refused = new Set<string>();

  constructor(readonly pageSize = 3) {}

  append(sessionId: string, n: number, type = 'thinking'): SessionEvent[] {
    const list = this.stored.get(sessionId) ?? [];
    const added = Array.from({ length: n }, (_, i) => event(list.length + i + 1, sessionId, type));
    list.push(...added);
    this.stored.set(sessionId, list);
    return added;
  }

  head(sessionId: string): number {
    return this.stored.get(sessionId)?.length ?? 0;
  }

  replay = (sessionId: string, afterSeq: number | undefined): Promise<ReplayPage> => {
    this.log.push(afterSeq);
    if (this.refused.has(sessionId)) return Promise.reject(new Error('not_found'));
    if (this.failNext > 0) {
      this.failNext--;
      return Promise.reject(new Error('no session worker'));
    }
    if (this.failing) return Promise.reject(new Error('no session worker'));
    const all = this.stored.get(sessionId) ?? [];
    const after = afterSeq === undefined ? all.length : afterSeq;
    const rest = all.filter((e) => e.seq > after);
    const page = rest.slice(0, this.pageSize);
    const hasMore = rest.length > page.length;
    return Promise.resolve(
      hasMore
        ? { events: page, last_seq: page[page.length - 1].seq, running: true, has_more: true }
        : { events: page, last_seq: all.length, running: this.running.get(sessionId) ?? false },
    );
  };
}

function socket() {
  const frames: Frame[] = [];
  const closed: number[] = [];
  const ws = {
    readyState: WebSocket.OPEN,
    bufferedAmount: 0,
    send: (data: string) => frames.push(JSON.parse(data) as Frame),
    close: (code: number) => closed.push(code),
  } as unknown as WebSocket;
  return { ws, frames, closed };
}

function connection(events = new FakeEvents()) {
  const { ws, frames, closed } = socket();
  const principal = { actor: { userId: 'u1', role: 'user' } } as unknown as Principal;
  const conn = new WsConnection(ws, principal, 'web', events.replay);
  const seqs = (): number[] => frames.filter((f) => f.seq !== undefined).map((f) => f.seq as number);
  const settle = () => new Promise((r) => setImmediate(r));
  return { conn, frames, closed, events, seqs, settle };
}

describe('WsConnection', () => {
  it('one event sent to many sockets is serialised once, and every socket gets the same frame', async () => {
    const sockets = Array.from({ length: 5 }, () => {
      const { ws } = socket();
      const sent: string[] = [];
      (ws as unknown as { send: (d: string) => void }).send = (d) => void sent.push(d);
      const principal = { actor: { userId: 'u1', role: 'user' } } as unknown as Principal;
      return { conn: new WsConnection(ws, principal, 'web', new FakeEvents().replay), sent };
    });
    for (const s of sockets) await s.conn.resume(S1, 0);
    const live = event(1);
    const other = { ...event(1), content: 'another object, same seq' } as SessionEvent;
    const stringify = jest.spyOn(JSON, 'stringify');
    try {
      for (const s of sockets) s.conn.deliverLive(live);
      expect(stringify).toHaveBeenCalledTimes(1);
      const ephemeral = { type: 'delta', session_id: S1, kind: 'content', delta: 'x' } as never;
      for (const s of sockets) s.conn.send(ephemeral);
      for (const s of sockets) s.conn.send(ephemeral);
      expect(stringify).toHaveBeenCalledTimes(2);
      // a fresh object is serialised anew (no stale text for an equal-looking event)
      sockets[0].conn.send(other);
      expect(stringify).toHaveBeenCalledTimes(3);
    } finally {
      stringify.mockRestore();
    }
    const delta = { type: 'delta', session_id: S1, kind: 'content', delta: 'x' };
    const tail = (sent: string[], n: number): unknown[] => sent.slice(-n).map((f) => JSON.parse(f) as unknown);
    expect(tail(sockets[0].sent, 4)).toEqual([{ ...live }, delta, delta, { ...other }]);
    for (const s of sockets.slice(1)) expect(tail(s.sent, 3)).toEqual([{ ...live }, delta, delta]);
  });

  it('a resume pages through every stored event after the cursor, then sends turn_running', async () => {
    const { conn, frames, events, seqs } = connection(new FakeEvents(100));
    events.append(S1, 2_345);
    events.running.set(S1, true);
    await conn.resume(S1, 10);
    expect(seqs()).toEqual(Array.from({ length: 2_335 }, (_, i) => i + 11));
    expect(frames[frames.length - 1]).toEqual({ type: 'turn_running', running: true });
    expect(events.log.length).toBe(24);
  });

  it('a connect reads only the state, calls hello first, and then follows live events from the end', async () => {
    const { conn, frames, events, seqs } = connection();
    events.append(S1, 5);
    await conn.resume(S1, undefined, () => frames.push({ type: 'hello' }));
    expect(frames.map((f) => f.type)).toEqual(['hello', 'turn_running']);
    conn.deliverLive(events.append(S1, 1)[0]);
    expect(seqs()).toEqual([6]);
  });

  it('turn_running comes after the replayed events it summarises and before the live ones that came meanwhile', async () => {
    const events = new FakeEvents();
    events.append(S1, 4);
    events.running.set(S1, true);
    const { ws, frames } = socket();
    const principal = { actor: { userId: 'u1', role: 'user' } } as unknown as Principal;
    // The turn ends while the replay is being read: its `done` arrives live meanwhile.
    const conn: WsConnection = new WsConnection(ws, principal, 'web', async (sessionId, afterSeq) => {
      const page = await events.replay(sessionId, afterSeq);
      if (!page.has_more) {
        events.running.set(S1, false);
        conn.deliverLive(events.append(S1, 1, 'done')[0]);
      }
      return page;
    });
    await conn.resume(S1, 0);
    const order = frames.map((f) => (f.type === 'turn_running' ? `turn_running:${String(f.running)}` : f.type));
    expect(order).toEqual(['thinking', 'thinking', 'thinking', 'thinking', 'turn_running:true', 'done']);
  });

  it("a message's echo that arrives before its submit is answered is sent after the ack", async () => {
    const { conn, frames, events } = connection();
    await conn.resume(S1, undefined);
    const [echo] = events.append(S1, 1, 'user_message');
    const sent = conn.holdingLive(async () => {
      // The worker's answer and the echo come in one NATS read: the echo is handed over first.
      conn.deliverLive(echo);
      await Promise.resolve();
      conn.send({ type: 'ack', client_message_id: 'c', message_id: 'm', duplicate: false });
    });
    await sent;
    expect(frames.map((f) => f.type)).toEqual(['turn_running', 'ack', 'user_message']);
    // A submit that fails still lets what it held go.
    const [next] = events.append(S1, 1, 'done');
    await expect(
      conn.holdingLive(() => {
        conn.deliverLive(next);
        return Promise.reject(new Error('no worker'));
      }),
    ).rejects.toThrow('no worker');
    expect(frames.map((f) => f.type)).toEqual(['turn_running', 'ack', 'user_message', 'done']);
  });

  it('a live event past a gap waits until the missing events are read from the table', async () => {
    const { conn, events, seqs, settle } = connection();
    await conn.resume(S1, undefined);
    const [e1, e2, e3] = events.append(S1, 3);
    conn.deliverLive(e1);
    // e2 was lost on the bus.
    conn.deliverLive(e3);
    await settle();
    expect(seqs()).toEqual([e1.seq, e2.seq, e3.seq]);
  });

  it('a gap that cannot be filled closes the socket for a resume instead of skipping it', async () => {
    const { conn, events, seqs, closed, settle } = connection();
    await conn.resume(S1, undefined);
    const [e1, , e3] = events.append(S1, 3);
    conn.deliverLive(e1);
    events.failing = true;
    conn.deliverLive(e3);
    await settle();
    expect(seqs()).toEqual([1]);
    expect(closed).toEqual([1011]);
  });

  it('a replay that says has_more without moving its cursor ends the resume with an error after one repeat, not a loop', async () => {
    const { ws } = socket();
    const principal = { actor: { userId: 'u1', role: 'user' } } as unknown as Principal;
    let asked = 0;
    const stuck = (): Promise<ReplayPage> => {
      asked++;
      return Promise.resolve({ events: [event(5)], last_seq: 5, running: true, has_more: true });
    };
    const conn = new WsConnection(ws, principal, 'web', stuck);
    await expect(conn.resume(S1, 5)).rejects.toThrow('event replay made no progress');
    expect(asked).toBe(1);
  });

  it('a refused resume changes nothing: the socket still gets its own session, also what came during the refusal', async () => {
    const events = new FakeEvents();
    events.refused.add(S2);
    const { ws, frames } = socket();
    const principal = { actor: { userId: 'u1', role: 'user' } } as unknown as Principal;
    const conn: WsConnection = new WsConnection(ws, principal, 'web', async (sessionId, afterSeq) => {
      // Events of both sessions go by while the refused session is being asked for.
      if (sessionId === S2) {
        conn.deliverLive(events.append(S1, 1, 'user_message')[0]);
        conn.deliverLive(events.append(S2, 1)[0]);
      }
      return events.replay(sessionId, afterSeq);
    });
    await conn.resume(S1, undefined);
    await expect(conn.resume(S2, 0)).rejects.toThrow('not_found');
    expect(conn.sessionId).toBe(S1);
    conn.deliverLive(events.append(S1, 1, 'done')[0]);
    conn.deliverLive(events.append(S2, 1)[0]);
    await new Promise((r) => setImmediate(r));
    expect(frames.map((f) => `${f.type}:${f.session_id ?? ''}:${f.seq ?? ''}`)).toEqual([
      'turn_running::',
      `user_message:${S1}:1`,
      `done:${S1}:2`,
    ]);
  });

  it('a resume that moves to another session keeps the live events that came while its first page was read', async () => {
    const events = new FakeEvents();
    events.append(S2, 2);
    const { ws, frames } = socket();
    const principal = { actor: { userId: 'u1', role: 'user' } } as unknown as Principal;
    const conn: WsConnection = new WsConnection(ws, principal, 'web', async (sessionId, afterSeq) => {
      const page = await events.replay(sessionId, afterSeq);
      if (sessionId === S2 && afterSeq === 0) conn.deliverLive(events.append(S2, 1, 'done')[0]);
      return page;
    });
    await conn.resume(S1, undefined);
    await conn.resume(S2, 0);
    expect(frames.map((f) => `${f.type}:${f.seq ?? ''}`)).toEqual([
      'turn_running:',
      'thinking:1',
      'thinking:2',
      'turn_running:',
      'done:3',
    ]);
  });

  it('after a gap in the bus connection a socket gets what it missed, in order, then turn_running', async () => {
    const { conn, frames, events, seqs } = connection();
    await conn.resume(S1, undefined);
    conn.deliverLive(events.append(S1, 1, 'user_message')[0]);
    // Published while the connection was down: never delivered, and nothing comes after them.
    events.append(S1, 4);
    events.append(S1, 1, 'done');
    await conn.catchUpAfterGap({ attempts: 1, waitMs: 0 });
    expect(seqs()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(frames[frames.length - 1]).toEqual({ type: 'turn_running', running: false });
    // A gap with nothing missed still says where the turn stands, and repeats nothing.
    await conn.catchUpAfterGap({ attempts: 1, waitMs: 0 });
    expect(seqs()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(frames.filter((f) => f.type === 'turn_running').length).toBe(3);
  });

  it('a catch-up after a gap tries again while no session worker answers, and closes 1011 once its tries are spent', async () => {
    const { conn, events, seqs, closed } = connection();
    await conn.resume(S1, undefined);
    events.append(S1, 2);
    events.failNext = 2;
    await conn.catchUpAfterGap({ attempts: 3, waitMs: 1 });
    expect(seqs()).toEqual([1, 2]);
    expect(closed).toEqual([]);
    events.append(S1, 1);
    events.failNext = 3;
    const asked = events.log.length;
    await conn.catchUpAfterGap({ attempts: 3, waitMs: 1 });
    expect(events.log.length - asked).toBe(3);
    expect(seqs()).toEqual([1, 2]);
    expect(closed).toEqual([1011]);
  });

  it('drops duplicates and events of other sessions', async () => {
    const { conn, events, seqs, settle } = connection();
    await conn.resume(S1, undefined);
    const [e1, e2] = events.append(S1, 2);
    const other = events.append(S2, 1)[0];
    for (const e of [e1, e1, other, e2, e1, e2]) conn.deliverLive(e);
    await settle();
    expect(seqs()).toEqual([1, 2]);
  });

  it('switching to another session follows it from its current end', async () => {
    const { conn, frames, events, seqs, settle } = connection();
    await conn.resume(S1, undefined);
    events.append(S2, 7);
    await conn.switchTo(S2);
    conn.deliverLive(events.append(S2, 1)[0]);
    await settle();
    expect(frames[frames.length - 2]).toEqual({ type: 'new_session', session_id: S2 });
    expect(seqs()).toEqual([8]);
  });

  it('any interleaving of live events, losses and resumes: the client sees 1..n in order, once each', async () => {
    console.log(`ws connection: seed=${SEED} — reproduce with FC_SEED=${SEED}`);
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ kind: fc.constant('live' as const), lost: fc.boolean(), dup: fc.boolean() }),
            fc.record({ kind: fc.constant('resume' as const), back: fc.nat(5) }),
            fc.record({ kind: fc.constant('gap' as const) }),
            fc.record({ kind: fc.constant('tick' as const) }),
          ),
          { maxLength: 60 },
        ),
        fc.integer({ min: 1, max: 5 }),
        async (steps, pageSize) => {
          const { conn, events, seqs, settle } = connection(new FakeEvents(pageSize));
          await conn.resume(S1, undefined);
          for (const step of steps) {
            if (step.kind === 'live') {
              const [e] = events.append(S1, 1);
              if (!step.lost) conn.deliverLive(e);
              if (step.dup) conn.deliverLive(e);
            } else if (step.kind === 'resume') {
              await conn.resume(S1, Math.max(0, conn.lastSeq - step.back));
            } else if (step.kind === 'gap') {
              void conn.catchUpAfterGap({ attempts: 1, waitMs: 0 });
            } else await settle();
          }
          // The last event is always delivered, so any loss before it is found.
          conn.deliverLive(events.append(S1, 1)[0]);
          for (let i = 0; i < 5; i++) await settle();
          const got = seqs();
          // Before any client resume: exactly 1..n. A resume re-delivers from its cursor, in order.
          let expected = 1;
          for (const s of got) {
            if (s !== expected) {
              if (s > expected) return false;
              expected = s; // a resume moved the cursor back
            }
            expected++;
          }
          return expected === events.head(S1) + 1;
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });
});
