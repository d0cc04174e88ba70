import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import fc from 'fast-check';
import { CLIENT_FRAME_TYPES, ClientFrame, type ServerFrame } from '@skald/contracts';
import { JSON_LIMITS } from '@skald/service-kit/bounded-json';
import { ChatConnection, MAX_FRAME_BYTES, type ChatConnectionOptions, type SocketCredential } from './connection.ts';
import { SkaldApiError } from './errors.ts';
import { FakeSocket } from './testing/fake-socket.ts';
import type { TurnEvent } from './turn.ts';

const S1 = '00000000-0000-4000-8000-000000000001';
const S2 = '00000000-0000-4000-8000-000000000002';

const flush = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};
const hello = (session_id = S1) => ({ type: 'hello', protocol: 1, server_version: 't', session_id });
const running = (r = false) => ({ type: 'turn_running', running: r });
const ev = (seq: number, body: Record<string, unknown> = {}, session_id = S1) => ({
  type: 'thinking',
  session_id,
  seq,
  message_id: `m${seq}`,
  content: `c${seq}`,
  ...body,
});

function connection(over: Partial<ChatConnectionOptions> = {}) {
  const frames: ServerFrame[] = [];
  const states: string[] = [];
  const conn = new ChatConnection({
    url: (c: SocketCredential) => `ws://gw/api/ws?source=t${'ticket' in c ? `&ticket=${c.ticket}` : ''}`,
    credential: async () => ({ ticket: 'tk' }),
    WebSocket: FakeSocket,
    startAt: async () => 0,
    ...over,
  });
  conn.onFrame((f) => frames.push(f));
  conn.onState((s) => states.push(s));
  const seqs = () => frames.filter((f) => 'seq' in f).map((f) => (f as { seq: number }).seq);
  return { conn, frames, states, seqs };
}

/** Starts a connection and answers its first socket with hello and the connect's turn_running. */
async function opened(over: Partial<ChatConnectionOptions> = {}) {
  const c = connection(over);
  c.conn.start();
  await flush();
  const ws = FakeSocket.last();
  ws.accept();
  ws.frame(hello());
  await flush();
  ws.frame(running());
  return { ...c, ws };
}

beforeEach(() => {
  FakeSocket.made = [];
  jest.useFakeTimers();
});
afterEach(() => {
  jest.useRealTimers();
});

describe('ChatConnection: frames', () => {
  it('reads every frame with the contracts reader: unknown types, non-objects and bad JSON are dropped', async () => {
    const { ws, frames } = await opened();
    const before = frames.length;
    ws.frame('not json');
    ws.frame('[1,2]');
    ws.frame({ type: 'from_the_future', x: 1 });
    ws.frame({ type: 'thinking', seq: 1 }); // a session event without its session_id
    expect(frames.length).toBe(before);
    ws.frame({ type: 'error', code: 'invalid_input', message: 'bad frame' });
    expect(frames.at(-1)).toMatchObject({ type: 'error', code: 'invalid_input' });
  });

  it('a binary frame is read as UTF-8 JSON', async () => {
    const { ws, seqs } = await opened();
    ws.onmessage?.({ data: new TextEncoder().encode(JSON.stringify(ev(2))) });
    ws.onmessage?.({ data: new TextEncoder().encode(JSON.stringify(ev(1))).buffer });
    expect(seqs()).toEqual([1]);
  });

  it('a session event of an unknown type keeps its place: the cursor moves past it, nothing is shown', async () => {
    const { conn, ws, seqs } = await opened();
    ws.frame(ev(1));
    ws.frame({ type: 'from_the_future', session_id: S1, seq: 2 });
    ws.frame(ev(3));
    expect(seqs()).toEqual([1, 3]);
    expect(conn.lastSeq).toBe(3);
    expect(ws.sentOf('resume')).toHaveLength(1);
  });
});

describe('ChatConnection: where a session starts and resume', () => {
  it('resumes after the seq startAt names; events that came while it loaded are held, not lost or doubled', async () => {
    let release!: (n: number) => void;
    const c = connection({ startAt: () => new Promise<number | null>((r) => (release = r)) });
    c.conn.start();
    await flush();
    const ws = FakeSocket.last();
    ws.accept();
    ws.frame(hello());
    ws.frame(running());
    ws.frame(ev(5));
    ws.frame(ev(6));
    expect(c.seqs()).toEqual([]);
    release(4);
    await flush();
    // the held events are delivered, and the resume asks for what follows them
    expect(c.seqs()).toEqual([5, 6]);
    expect(ws.sentOf('resume')).toEqual([{ type: 'resume', session_id: S1, last_seq: 6 }]);
    // live events the server sent before it read the resume come again: not doubled
    for (const s of [6, 7]) ws.frame(ev(s));
    ws.frame(running());
    expect(c.seqs()).toEqual([5, 6, 7]);
  });

  it('ready() waits for the start, and a turn sent meanwhile goes after it: its events are past the start, not taken as seen', async () => {
    let release!: (n: number) => void;
    const c = connection({ startAt: () => new Promise<number | null>((r) => (release = r)) });
    c.conn.start();
    await flush();
    const ws = FakeSocket.last();
    ws.accept();
    ws.frame(hello());
    let ready = false;
    void c.conn.ready().then(() => (ready = true));
    const turn = c.conn.message('hi', { clientMessageId: 'r1' });
    await flush();
    expect(ready).toBe(false);
    expect(ws.sentOf('message')).toEqual([]);
    // the history page the start comes from holds everything up to seq 9
    release(9);
    await flush();
    expect(ready).toBe(true);
    expect(ws.sentOf('message')).toEqual([{ type: 'message', client_message_id: 'r1', content: 'hi' }]);
    ws.frame({ type: 'ack', client_message_id: 'r1', message_id: 'u10', duplicate: false });
    ws.frame(ev(10, { type: 'user_message', message_id: 'u10', client_message_id: 'r1', content: 'hi' }));
    ws.frame(ev(11, { type: 'done', message_id: 'a11', content: 'ok' }));
    await expect(turn.end).resolves.toMatchObject({ kind: 'done', frame: { content: 'ok' } });
    c.conn.stop();
  });

  it('a start that never answers gives up after startAtTimeoutMs and replays the session from its start', async () => {
    const c = connection({ startAt: () => new Promise<number | null>(() => undefined), startAtTimeoutMs: 5_000 });
    c.conn.start();
    await flush();
    const ws = FakeSocket.last();
    ws.accept();
    ws.frame(hello());
    const turn = c.conn.message('hi', { clientMessageId: 'r2' });
    await jest.advanceTimersByTimeAsync(4_999);
    expect(ws.sentOf('message')).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    await flush();
    expect(ws.sentOf('resume')).toEqual([{ type: 'resume', session_id: S1, last_seq: 0 }]);
    expect(ws.sentOf('message')).toHaveLength(1);
    expect(turn.status).toBe('sending');
    c.conn.stop();
  });

  it('startAt failing or answering null replays the session from its start', async () => {
    const { ws } = await opened({
      startAt: async () => {
        throw new Error('no page');
      },
    });
    expect(ws.sentOf('resume')).toEqual([{ type: 'resume', session_id: S1, last_seq: 0 }]);
  });

  it('after a drop it reconnects with a fresh credential and resumes after the last event it delivered', async () => {
    let n = 0;
    const { ws, seqs, states } = await opened({ credential: async () => ({ ticket: `t${++n}` }) });
    ws.frame(ev(1));
    ws.frame(ev(2));
    ws.drop(1011);
    expect(states.at(-1)).toBe('closed');
    await jest.advanceTimersByTimeAsync(500);
    const again = FakeSocket.last();
    expect(again).not.toBe(ws);
    expect(again.url).toContain('ticket=t2');
    again.accept();
    again.frame(hello());
    expect(again.sentOf('resume')).toEqual([{ type: 'resume', session_id: S1, last_seq: 2 }]);
    for (const s of [1, 2, 3]) again.frame(ev(s));
    expect(seqs()).toEqual([1, 2, 3]);
  });

  it('new_session: the connection follows the new session from its start; the old one is ignored', async () => {
    const { ws, seqs, conn } = await opened();
    ws.frame(ev(1));
    ws.frame({ type: 'new_session', session_id: S2 });
    await flush();
    expect(conn.sessionId).toBe(S2);
    expect(ws.sentOf('resume').at(-1)).toEqual({ type: 'resume', session_id: S2, last_seq: 0 });
    ws.frame(ev(2));
    ws.frame(ev(1, {}, S2));
    expect(seqs()).toEqual([1, 1]);
  });
});

describe('ChatConnection: gaps', () => {
  it('an event past a gap is not shown; the connection resumes from its cursor and the replay fills the gap', async () => {
    const { ws, seqs } = await opened();
    ws.frame(running()); // the first resume's turn_running: nothing on its way any more
    ws.frame(ev(1));
    ws.frame(ev(3));
    expect(seqs()).toEqual([1]);
    expect(ws.sentOf('resume').at(-1)).toEqual({ type: 'resume', session_id: S1, last_seq: 1 });
    ws.frame(ev(4)); // a replay is on its way: no second resume
    expect(ws.sentOf('resume')).toHaveLength(2);
    for (const s of [2, 3, 4]) ws.frame(ev(s));
    ws.frame(running());
    expect(seqs()).toEqual([1, 2, 3, 4]);
  });

  it('gaps that resumes do not fill: after 3 resumes the socket is dropped and opened again', async () => {
    const { ws } = await opened();
    ws.frame(running());
    for (let i = 0; i < 4; i++) {
      ws.frame(ev(10 + i));
      ws.frame(running());
    }
    expect(ws.sentOf('resume')).toHaveLength(4);
    expect(ws.closedWith).toBe(4000);
    await jest.advanceTimersByTimeAsync(500);
    expect(FakeSocket.made).toHaveLength(2);
  });

  it('property: whatever the server drops, doubles or reorders live, and wherever the socket drops, each event is delivered once and in order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 40 }),
        fc.array(fc.constantFrom('send', 'skip', 'dup', 'drop', 'stale'), { minLength: 1, maxLength: 120 }),
        async (total, script) => {
          FakeSocket.made = [];
          const c = connection({ reconnect: { baseMs: 1, maxMs: 1, maxTries: 1000 } });
          c.conn.start();
          // The server: events 1..total are stored; `next` is the next one it sends live.
          let next = 1;
          let ws: FakeSocket | null = null;
          let answered = 0;
          const serve = async () => {
            await flush();
            if (!ws || ws.readyState === 3) {
              await jest.advanceTimersByTimeAsync(2);
              ws = FakeSocket.last();
              ws.accept();
              ws.frame(hello());
              answered = 0;
              await flush();
              ws.frame(running());
            }
            // answer every resume the client sent: the events after its cursor, then turn_running
            const resumes = ws.sentOf('resume');
            for (; answered < resumes.length; answered++) {
              const from = resumes[answered].last_seq as number;
              for (let s = from + 1; s < next; s++) ws.frame(ev(s));
              ws.frame(running());
            }
          };
          for (const step of script) {
            await serve();
            const w = ws as FakeSocket | null;
            if (!w) continue;
            if (step === 'drop') w.drop(1006);
            else if (next <= total) {
              if (step === 'send' || step === 'dup') w.frame(ev(next));
              if (step === 'dup') w.frame(ev(next));
              if (step === 'stale' && next > 1) w.frame(ev(next - 1));
              next++;
            }
          }
          // then the server behaves: the rest live, and every resume answered
          for (; next <= total; next++) {
            await serve();
            (ws as FakeSocket | null)?.frame(ev(next));
          }
          // a live event lost with no later one to reveal it is the server's to resend (it catches up
          // after a bus gap); here the socket is dropped once more, and the resume brings it
          await serve();
          (ws as FakeSocket | null)?.drop(1006);
          for (let i = 0; i < 5; i++) await serve();
          const seqs = c.seqs();
          c.conn.stop();
          expect(seqs).toEqual(Array.from({ length: total }, (_, i) => i + 1));
        },
      ),
      { seed: 37, numRuns: 300 },
    );
    // 300 scripts of up to 120 steps, each step a few flushed promise turns: ~3 s alone, more beside other suites.
  }, 60_000);
});

describe('ChatConnection: reconnect bounds and credentials', () => {
  it('waits twice as long after each failed try, never more than maxMs, and gives up after maxTries', async () => {
    const c = connection({
      credential: async () => {
        throw new Error('gateway down');
      },
      reconnect: { baseMs: 100, maxMs: 400, maxTries: 4 },
    });
    c.conn.start();
    const waits: number[] = [];
    const spy = jest.spyOn(globalThis, 'setTimeout');
    for (let i = 0; i < 6; i++) await jest.advanceTimersByTimeAsync(1000);
    for (const call of spy.mock.calls) waits.push(call[1] as number);
    spy.mockRestore();
    expect(waits.filter((w) => w >= 100)).toEqual([100, 200, 400, 400]);
    expect(c.conn.state).toBe('closed');
    expect(c.conn.closedWith?.reason).toBe('gave_up');
  });

  it('4401 (the credential ended) closes for good: no reconnect, a waiting turn fails', async () => {
    const { ws, conn } = await opened();
    const turn = conn.message('hi');
    ws.drop(4401, 'token revoked');
    await jest.advanceTimersByTimeAsync(60_000);
    expect(FakeSocket.made).toHaveLength(1);
    expect(conn.closedWith?.reason).toBe('unauthorized');
    await expect(turn.end).rejects.toThrow('token revoked');
  });

  it('a refused ticket (401) closes for good', async () => {
    const c = connection({
      credential: async () => {
        throw new SkaldApiError(401, 'unauthorized', 'invalid token');
      },
    });
    c.conn.start();
    await flush();
    expect(c.conn.closedWith?.reason).toBe('unauthorized');
    await expect(c.conn.ready()).rejects.toThrow('invalid token');
  });

  it('header credentials go to the constructor, never into the URL', async () => {
    const { ws } = await opened({ credential: async () => ({ headers: { authorization: 'Bearer secret' } }) });
    expect(ws.options).toEqual({ headers: { authorization: 'Bearer secret' } });
    expect(ws.url).not.toContain('secret');
  });
});

describe('Turn: one message, from its echo to its end', () => {
  const echo = (seq: number, id: string) => ({
    type: 'user_message',
    session_id: S1,
    seq,
    message_id: `u${seq}`,
    client_message_id: id,
    content: 'hi',
  });
  const done = (seq: number) => ({
    type: 'done',
    session_id: S1,
    seq,
    message_id: `m${seq}`,
    stack_id: 's',
    content: 'ok',
  });

  it('yields the echo, the deltas and the events up to the root done, then ends; the ack resolves', async () => {
    const { ws, conn } = await opened();
    const turn = conn.message('hi', { clientMessageId: 'c1', delivery: 'queue' });
    expect(ws.sentOf('message')).toEqual([
      { type: 'message', client_message_id: 'c1', content: 'hi', delivery: 'queue' },
    ]);
    ws.frame(ev(1)); // before the echo: not this turn's
    ws.frame({ type: 'ack', client_message_id: 'c1', message_id: 'u2', duplicate: false });
    ws.frame(echo(2, 'c1'));
    ws.frame({
      type: 'token_delta',
      session_id: S1,
      message_id: 'm3',
      depth: 0,
      kind: 'content',
      offset: 0,
      delta: 'o',
      after_seq: 2,
    });
    ws.frame(ev(3));
    ws.frame(done(4));
    ws.frame(ev(5)); // after the end
    const seen: TurnEvent[] = [];
    for await (const f of turn) seen.push(f);
    expect(seen.map((f) => f.type)).toEqual(['user_message', 'token_delta', 'thinking', 'done']);
    await expect(turn.acked).resolves.toMatchObject({ message_id: 'u2' });
    await expect(turn.end).resolves.toMatchObject({ kind: 'done', frame: { content: 'ok' } });
  });

  it('a message sent while the socket is down goes when it opens, and again after a reconnect until acked', async () => {
    const c = connection();
    c.conn.start();
    const turn = c.conn.message('hi', { clientMessageId: 'c2' });
    await flush();
    const ws = FakeSocket.last();
    ws.accept();
    ws.frame(hello());
    await flush(); // frames that start turns wait for the session's start (startAt)
    expect(ws.sentOf('message')).toHaveLength(1);
    ws.drop();
    await jest.advanceTimersByTimeAsync(500);
    const again = FakeSocket.last();
    again.accept();
    again.frame(hello());
    await flush();
    expect(again.sentOf('message')).toEqual([{ type: 'message', client_message_id: 'c2', content: 'hi' }]);
    again.frame({ type: 'ack', client_message_id: 'c2', message_id: 'u1', duplicate: true });
    await expect(turn.acked).resolves.toMatchObject({ duplicate: true });
  });

  it('a turn split by a reconnect: every event once, in order', async () => {
    const { ws, conn } = await opened();
    const turn = conn.message('hi', { clientMessageId: 'c3' });
    ws.frame(echo(1, 'c3'));
    ws.frame(ev(2));
    ws.drop();
    await jest.advanceTimersByTimeAsync(500);
    const again = FakeSocket.last();
    again.accept();
    again.frame(hello());
    for (const f of [echo(1, 'c3'), ev(2), ev(3), done(4)]) again.frame(f);
    const seqs: number[] = [];
    for await (const f of turn) if ('seq' in f) seqs.push(f.seq);
    expect(seqs).toEqual([1, 2, 3, 4]);
  });

  it('a session error ends the turn; a discarded message ends its turn at message_discarded', async () => {
    const { ws, conn } = await opened();
    const a = conn.message('a', { clientMessageId: 'ca' });
    const b = conn.message('b', { clientMessageId: 'cb' });
    ws.frame(echo(1, 'ca'));
    ws.frame({ type: 'error', session_id: S1, seq: 2, code: 'interrupted', message: 'stopped' });
    ws.frame({ type: 'message_discarded', session_id: S1, seq: 3, message_id: 'u3', client_message_id: 'cb' });
    await expect(a.end).resolves.toMatchObject({ kind: 'error', frame: { code: 'interrupted' } });
    await expect(b.end).resolves.toMatchObject({ kind: 'discarded' });
  });

  it('a slash command ends at its command_result', async () => {
    const { ws, conn } = await opened();
    const t = conn.message('/help');
    ws.frame({ type: 'command_result', command: '/help', content: 'commands' });
    await expect(t.end).resolves.toMatchObject({ kind: 'command', frame: { content: 'commands' } });
  });

  it('approve, reject, answer and cancel send their frames', async () => {
    const { ws, conn } = await opened();
    expect(conn.approve('r1', { bypass_scope: 'call' })).toBe(true);
    expect(conn.reject('r2', 'no')).toBe(true);
    expect(conn.answer('r3', 'yes')).toBe(true);
    expect(conn.cancel()).toBe(true);
    expect(ws.sent.slice(-4)).toEqual([
      { type: 'approve_tool', request_id: 'r1', bypass_scope: 'call' },
      { type: 'reject_tool', request_id: 'r2', note: 'no' },
      { type: 'answer_question', request_id: 'r3', answer: 'yes' },
      { type: 'cancel' },
    ]);
    ws.drop();
    expect(conn.cancel()).toBe(false);
  });

  const superseded = (seq: number, from: string, keeps?: true) => ({
    type: 'messages_superseded',
    session_id: S1,
    seq,
    from_message_id: from,
    ...(keeps ? { keeps_message: true } : {}),
  });

  it('regenerate: its turn starts at the messages_superseded that keeps the message its ack names, also when that came first', async () => {
    const { ws, conn } = await opened();
    const t = conn.regenerate({ clientMessageId: 'r1' });
    expect(ws.sentOf('regenerate')).toEqual([{ type: 'regenerate', client_message_id: 'r1' }]);
    ws.frame(superseded(1, 'u-other', true)); // another rewind's
    ws.frame(superseded(2, 'u9', true));
    ws.frame(ev(3));
    ws.frame({ type: 'ack', client_message_id: 'r1', message_id: 'u9', duplicate: false });
    ws.frame(done(4));
    const seen: TurnEvent[] = [];
    for await (const f of t) seen.push(f);
    expect(seen.map((f) => ('seq' in f ? f.seq : f.type))).toEqual([2, 3, 4]);
    await expect(t.end).resolves.toMatchObject({ kind: 'done' });
  });

  it('edit: its turn starts at the messages_superseded from the edited message and takes the new echo', async () => {
    const { ws, conn } = await opened();
    const t = conn.edit('u5', 'better', { clientMessageId: 'e1' });
    expect(ws.sentOf('edit')).toEqual([{ type: 'edit', message_id: 'u5', content: 'better', client_message_id: 'e1' }]);
    ws.frame(superseded(1, 'u4'));
    ws.frame(superseded(2, 'u5'));
    ws.frame(echo(3, 'e1'));
    ws.frame(done(4));
    const seqs: number[] = [];
    for await (const f of t) if ('seq' in f) seqs.push(f.seq);
    expect(seqs).toEqual([2, 3, 4]);
  });

  it('select_client sends its frame', async () => {
    const { ws, conn } = await opened();
    expect(conn.selectClient('auto')).toBe(true);
    expect(ws.sent.at(-1)).toEqual({ type: 'select_client', client: 'auto' });
  });

  it('every client frame type of the contracts has an SDK method, and what each sends is a valid frame', async () => {
    const { ws, conn } = await opened();
    const senders: { [T in ClientFrame['type']]: () => void } = {
      message: () => conn.message('hi'),
      cancel: () => conn.cancel(),
      resume: () => {
        // the replays asked for are in, then a gap: the connection resumes by itself
        ws.frame(running());
        ws.frame(ev(5));
      },
      approve_tool: () => conn.approve('00000000-0000-4000-8000-00000000000a', { bypass_secs: 60 }),
      reject_tool: () => conn.reject('00000000-0000-4000-8000-00000000000a', 'no'),
      answer_question: () => conn.answer('00000000-0000-4000-8000-00000000000a', 'yes'),
      select_client: () => conn.selectClient('auto'),
      regenerate: () => conn.regenerate(),
      edit: () => conn.edit('00000000-0000-4000-8000-00000000000b', 'again'),
      ping: () => jest.advanceTimersByTime(15_000), // silence: the heartbeat pings
    };
    expect(Object.keys(senders).sort()).toEqual([...CLIENT_FRAME_TYPES].sort());
    for (const type of CLIENT_FRAME_TYPES) {
      const before = ws.sent.length;
      senders[type]();
      const sent = ws.sent.slice(before);
      // acknowledged, so nothing waits to be sent again
      for (const f of sent)
        if (typeof f.client_message_id === 'string')
          ws.frame({ type: 'ack', client_message_id: f.client_message_id, message_id: 'u', duplicate: false });
      expect([type, sent.map((f) => f.type)]).toEqual([type, [type]]);
      expect([type, ClientFrame.safeParse(sent[0]).success]).toEqual([type, true]);
    }
  });
});

describe('Turn: a frame the gateway refuses ends its turn', () => {
  it('property: each refused message, regenerate or edit ends its own turn with the error; the others go on and it is not sent again', async () => {
    const refusal = fc.record({
      code: fc.constantFrom('invalid_input', 'not_found', 'conflict', 'rate_limited', 'too_large'),
      message: fc.string({ maxLength: 40 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('message', 'regenerate', 'edit'), fc.option(refusal, { nil: undefined })), {
          minLength: 1,
          maxLength: 8,
        }),
        async (plan) => {
          FakeSocket.made = [];
          const { ws, conn } = await opened();
          const turns = plan.map(([kind], i) =>
            kind === 'message'
              ? conn.message(`m${i}`, { clientMessageId: `c${i}` })
              : kind === 'regenerate'
                ? conn.regenerate({ clientMessageId: `c${i}` })
                : conn.edit(`u${i}`, 'x', { clientMessageId: `c${i}` }),
          );
          plan.forEach(([, refused], i) => {
            if (refused) ws.frame({ type: 'error', ...refused, client_message_id: `c${i}` });
          });
          await flush();
          // what each turn shows, against what it should show: one expect per run (each expect costs a stack capture)
          const seen: unknown[] = [];
          for (const [i, [, refused]] of plan.entries()) {
            const done = turns[i].done;
            if (!refused) {
              seen.push({ done });
              continue;
            }
            const end = await turns[i].end;
            const acked = await turns[i].acked.then(
              (value) => ({ resolved: value }),
              (e: unknown) => ({ rejected: e instanceof Error ? e.message : String(e) }),
            );
            const read: TurnEvent[] = [];
            for await (const f of turns[i]) read.push(f);
            seen.push({ done, end, acked, read });
          }
          expect(seen).toEqual(
            plan.map(([, refused], i) =>
              refused
                ? {
                    done: true,
                    end: { kind: 'refused', frame: { type: 'error', ...refused, client_message_id: `c${i}` } },
                    acked: { rejected: expect.stringContaining(refused.code) },
                    read: [],
                  }
                : { done: false },
            ),
          );
          // after a reconnect only what was neither acked nor refused is sent again
          ws.drop();
          await jest.advanceTimersByTimeAsync(500);
          const again = FakeSocket.last();
          again.accept();
          again.frame(hello());
          await flush();
          const resent = again.sent
            .filter((f) => typeof f.client_message_id === 'string')
            .map((f) => f.client_message_id);
          expect(resent).toEqual(plan.flatMap(([, refused], i) => (refused ? [] : [`c${i}`])));
          conn.stop();
        },
      ),
      { seed: 37, numRuns: 300 },
    );
    // 300 plans on the fake clock, each a connect, a reconnect and a few flushed promise turns: ~1 s alone, more
    // beside other suites; the bound guards against a hang, the clock is Jest's.
  }, 60_000);

  it('an error about another frame (no client_message_id, or another one) ends no turn', async () => {
    const { ws, conn } = await opened();
    const t = conn.message('hi', { clientMessageId: 'mine' });
    ws.frame({ type: 'error', code: 'not_found', message: 'no such request', request_id: 'r' });
    ws.frame({ type: 'error', code: 'invalid_input', message: 'x', client_message_id: 'theirs' });
    await flush();
    expect(t.done).toBe(false);
  });

  it("a message larger than the gateway reads is refused here, never sent; the limit is the gateway's", async () => {
    expect(MAX_FRAME_BYTES).toBe(JSON_LIMITS.maxBytes);
    const { ws, conn } = await opened();
    const t = conn.message('é'.repeat(MAX_FRAME_BYTES / 2), { clientMessageId: 'big' });
    await expect(t.end).resolves.toMatchObject({
      kind: 'refused',
      frame: { code: 'too_large', client_message_id: 'big' },
    });
    expect(ws.sentOf('message')).toEqual([]);
  });
});

describe('ChatConnection: heartbeat', () => {
  it('a socket that goes silent (never closes) is pinged, then dropped after the timeout; the connection reconnects and resumes', async () => {
    const { ws, conn, states } = await opened({ heartbeat: { idleMs: 1000, timeoutMs: 500 } });
    ws.frame(ev(1));
    await jest.advanceTimersByTimeAsync(999);
    expect(ws.sentOf('ping')).toHaveLength(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(ws.sentOf('ping')).toHaveLength(1);
    // the socket stays "open" and says nothing: a half-open connection
    await jest.advanceTimersByTimeAsync(499);
    expect(FakeSocket.made).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(ws.closedWith).toBe(4001);
    expect(states.at(-1)).toBe('closed');
    await jest.advanceTimersByTimeAsync(500);
    const again = FakeSocket.last();
    expect(again).not.toBe(ws);
    again.accept();
    again.frame(hello());
    await flush();
    expect(again.sentOf('resume')).toEqual([{ type: 'resume', session_id: S1, last_seq: 1 }]);
    expect(conn.state).toBe('open');
    conn.stop();
  });

  it('a socket that answers pong (or any frame) lives on; pings are bounded by the silence, one per idle period', async () => {
    const { ws, conn } = await opened({ heartbeat: { idleMs: 1000, timeoutMs: 500 } });
    for (let i = 0; i < 5; i++) {
      await jest.advanceTimersByTimeAsync(1000);
      expect(ws.sentOf('ping')).toHaveLength(i + 1);
      await jest.advanceTimersByTimeAsync(100);
      ws.frame({ type: 'pong' });
    }
    await jest.advanceTimersByTimeAsync(10_000);
    expect(ws.closedWith).toBe(4001); // once the pongs stop, so does the socket
    expect(ws.sentOf('ping')).toHaveLength(6);
    conn.stop();
  });

  it('a stopped connection keeps no heartbeat timer', async () => {
    const { conn } = await opened({ heartbeat: { idleMs: 1000, timeoutMs: 500 } });
    conn.stop();
    expect(jest.getTimerCount()).toBe(0);
  });
});

describe('ChatConnection: the one resend of unacknowledged messages', () => {
  it('re-sends after the ack timeout with a growing backoff, then the turn is unconfirmed; resend starts a fresh bound', async () => {
    // a server that answers nothing but keeps the socket (no heartbeat drop within the two minutes)
    const { ws, conn } = await opened({ heartbeat: { idleMs: 1e9 } });
    const t = conn.message('hi', { clientMessageId: 'a' });
    const times: number[] = [];
    const statuses: string[] = [];
    t.onStatus((s) => statuses.push(s));
    let sent = 0;
    for (let now = 0; now < 120_000; now += 100) {
      const n = ws.sentOf('message').length;
      if (n > sent) times.push(now);
      sent = n;
      await jest.advanceTimersByTimeAsync(100);
    }
    expect(times).toHaveLength(4);
    expect(times.slice(1).map((x, i) => x - times[i])).toEqual([3_500, 4_000, 5_000]);
    expect(new Set(ws.sentOf('message').map((f) => f.client_message_id))).toEqual(new Set(['a']));
    expect(t.status).toBe('unconfirmed');
    expect(statuses).toEqual(['unconfirmed']);
    // a reconnect does not send an unconfirmed message; resend does, once, and an ack settles it
    expect(conn.resend(t)).toBe(true);
    expect(ws.sentOf('message')).toHaveLength(5);
    expect(conn.resend(t)).toBe(false);
    ws.frame({ type: 'ack', client_message_id: 'a', message_id: 'u1', duplicate: false });
    expect(t.status).toBe('stored');
    await jest.advanceTimersByTimeAsync(60_000);
    expect(ws.sentOf('message')).toHaveLength(5);
    expect(statuses).toEqual(['unconfirmed', 'sending', 'stored']);
    // two minutes of the fake clock in 1,200 steps; the bound guards against a hang.
  }, 60_000);

  it('property: whatever the socket and the acks do, every send carries the one id, sends are bounded, and the turn ends stored or unconfirmed', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ open: fc.boolean(), ackArrives: fc.boolean(), dt: fc.integer({ min: 0, max: 20_000 }) }), {
          maxLength: 30,
        }),
        async (steps) => {
          FakeSocket.made = [];
          const c = connection({ reconnect: { baseMs: 10, maxMs: 10, maxTries: Infinity } });
          c.conn.start();
          await flush();
          const t = c.conn.message('hi', { clientMessageId: 'm1' });
          const sent: unknown[] = [];
          let acked = false;
          let live: FakeSocket | null = null;
          for (const step of [...steps, { open: true, ackArrives: true, dt: 60_000 }]) {
            if (step.open && !live) {
              await jest.advanceTimersByTimeAsync(20);
              live = FakeSocket.last();
              if (live.readyState === 0) {
                live.accept();
                live.frame(hello());
              }
            } else if (!step.open && live) {
              live.drop();
              live = null;
            }
            for (const s of FakeSocket.made) {
              const mine = s.sentOf('message');
              while (mine.length > 0 && (s as unknown as { counted?: number }).counted !== mine.length) {
                const counted = (s as unknown as { counted?: number }).counted ?? 0;
                sent.push(...mine.slice(counted).map((f) => f.client_message_id));
                (s as unknown as { counted?: number }).counted = mine.length;
              }
            }
            if (live && step.ackArrives && sent.length > 0 && !acked) {
              acked = true;
              live.frame({ type: 'ack', client_message_id: 'm1', message_id: 'u1', duplicate: sent.length > 1 });
            }
            await jest.advanceTimersByTimeAsync(step.dt);
          }
          expect(new Set(sent)).toEqual(new Set(sent.length ? ['m1'] : []));
          expect(sent.length).toBeLessThanOrEqual(4);
          expect(['stored', 'unconfirmed']).toContain(t.status);
          c.conn.stop();
        },
      ),
      { seed: 37, numRuns: 200 },
    );
    // 200 scripts of up to 31 steps on the fake clock: ~1 s alone; the bound guards against a hang.
  }, 60_000);

  it('a message sent while the socket is down is not counted: it goes when the socket opens', async () => {
    const c = connection();
    c.conn.start();
    const t = c.conn.message('hi', { clientMessageId: 'd' });
    await jest.advanceTimersByTimeAsync(60_000);
    await flush();
    const ws = FakeSocket.last();
    ws.accept();
    ws.frame(hello());
    await flush();
    expect(ws.sentOf('message')).toHaveLength(1);
    expect(t.status).toBe('sending');
    c.conn.stop();
  });
});
