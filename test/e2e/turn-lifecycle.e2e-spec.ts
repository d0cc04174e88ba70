import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, Frame, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { until } from '../support/until';

jest.setTimeout(180_000);

const isSessionEvent = (f: Frame): boolean => typeof f.seq === 'number';
const types = (ws: WsTestClient, sessionId: string): string[] =>
  ws.frames.filter((f) => isSessionEvent(f) && f.session_id === sessionId).map((f) => f.type);

describe('turn lifecycle across replicas: stop, delivery modes, resume, 503', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      replicas: { 'session-worker': 2, gateway: 2 },
      env: { SKALD_LEASE_TTL_MS: '3000', SKALD_SWEEP_INTERVAL_MS: '1000' },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  async function user(): Promise<{ api: ApiClient; ws: WsTestClient; sessionId: string }> {
    const api = await admin.createUser(`l-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    await ws.waitForType('turn_running');
    return { api, ws, sessionId };
  }

  it('/stop aborts the in-flight LLM request (the simulator sees the connection close) and the client gets "interrupted by user"', async () => {
    const { ws, sessionId } = await user();
    const marker = `stop-${randomUUID()}`;
    await sim.script({
      match: marker,
      replies: [{ content: 'word '.repeat(400), chunkSize: 5, latency: { betweenChunksMs: 50 } }],
    });
    ws.send({ type: 'message', client_message_id: marker, content: `talk ${marker}` });
    await ws.waitForType('token_delta');
    ws.send({ type: 'cancel' });
    const err = await ws.waitFor((f) => f.type === 'error' && f.code === 'interrupted');
    expect(err.message).toBe('interrupted by user');
    expect(err.session_id).toBe(sessionId);
    const req = await sim.waitForRequest((r) => JSON.stringify(r.body).includes(marker) && r.clientAborted, {
      timeoutMs: 10_000,
    });
    expect(req.outcome).toBe('client_aborted');
    expect(types(ws, sessionId)).not.toContain('done');
    // The turn is over: a new message is answered.
    const next = `after-${randomUUID()}`;
    await sim.script({ match: next, replies: [{ content: 'back again' }] });
    ws.send({ type: 'message', client_message_id: next, content: `hello ${next}` });
    await ws.waitFor((f) => f.type === 'done' && f.content === 'back again');
    ws.close();
  });

  it('a stop racing a completion, 50 times with random delays, ends each turn exactly once', async () => {
    const { ws, sessionId } = await user();
    const m = `race-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: 'raced', latency: { firstByteMs: 30 } }], repeatLast: true });
    const endings: string[] = [];
    for (let i = 0; i < 50; i++) {
      const from = ws.frames.length;
      ws.send({ type: 'message', client_message_id: `${m}-${i}`, content: `go ${m} ${i}` });
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 80)));
      ws.send({ type: 'cancel' });
      const end = await ws.waitFor(
        (f) => f.session_id === sessionId && (f.type === 'done' || f.type === 'error'),
        20_000,
        from,
      );
      endings.push(end.type);
      // Wait until the session is idle again, so the next message starts a fresh turn.
      for (let k = 0; k < 100; k++) {
        const rows: Array<{ turn_state: string; stop: boolean }> = await db.query(
          `SELECT turn_state, stop_requested_at IS NOT NULL AS stop FROM sessions WHERE id = $1`,
          [sessionId],
        );
        if (rows[0].turn_state === 'finished' && !rows[0].stop) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await new Promise((r) => setTimeout(r, 100));
      const terminal = ws.frames
        .slice(from)
        .filter((f) => f.session_id === sessionId && (f.type === 'done' || f.type === 'error'));
      expect(terminal).toHaveLength(1);
    }
    // Every turn ended exactly once in the table too: one terminal event per user message.
    const rows: Array<{ users: number; terminals: number }> = await db.query(
      `SELECT (SELECT count(*)::int FROM chat_history WHERE session_id = $1 AND role = 'user') AS users,
              (SELECT count(*)::int FROM session_events WHERE session_id = $1 AND type IN ('done', 'error')) AS terminals`,
      [sessionId],
    );
    expect(rows[0]).toEqual({ users: 50, terminals: 50 });
    expect(endings.length).toBe(50);
    ws.close();
  });

  it('steer enters at the next round boundary; queue waits for the next turn; interrupt stops the turn and starts its own', async () => {
    const { ws, sessionId } = await user();
    const m = randomUUID();
    await sim.script({
      match: `first-${m}`,
      replies: [
        { tool_calls: [{ name: 'list_files', arguments: {} }], latency: { firstByteMs: 1500 } },
        { content: 'first answer', latency: { firstByteMs: 300 } },
      ],
    });
    await sim.script({ match: `queued-${m}`, matchIn: 'last_user', replies: [{ content: 'queued answer' }] });
    ws.send({ type: 'message', client_message_id: `a-${m}`, content: `first-${m}` });
    await ws.waitForType('user_message');
    // Sent while the model thinks about the first round (it has the request; its answer takes 1.5 s).
    await until(
      'the first model call',
      async () => (await sim.requests({ contains: `first-${m}` })).length === 1,
      10_000,
    );
    ws.send({ type: 'message', client_message_id: `b-${m}`, content: `steer-${m}`, delivery: 'steer' });
    ws.send({ type: 'message', client_message_id: `c-${m}`, content: `queued-${m}`, delivery: 'queue' });
    await ws.waitFor((f) => f.type === 'done' && f.content === 'queued answer', 30_000);

    const events = ws.frames.filter((f) => isSessionEvent(f) && f.session_id === sessionId);
    const echoes = events.filter((e) => e.type === 'user_message').map((e) => e.content);
    expect(echoes).toEqual([`first-${m}`, `steer-${m}`, `queued-${m}`]);
    const at = (pred: (f: Frame) => boolean): number => events.findIndex(pred);
    // The steer message entered after the tool's round, before the first answer.
    expect(at((e) => e.content === `steer-${m}`)).toBeGreaterThan(at((e) => e.type === 'tool_done'));
    expect(at((e) => e.content === `steer-${m}`)).toBeLessThan(
      at((e) => e.type === 'done' && e.content === 'first answer'),
    );
    // The queued one only after the first turn was done.
    expect(at((e) => e.content === `queued-${m}`)).toBeGreaterThan(
      at((e) => e.type === 'done' && e.content === 'first answer'),
    );
    // The model saw the steer message in the same turn, after the tool result.
    const second = (await sim.requests({ contains: `first-${m}` }))[1].body as {
      messages: Array<{ role: string; content: unknown }>;
    };
    const conversation = second.messages.filter((x) => x.role !== 'system');
    expect(conversation.slice(-2).map((x) => x.role)).toEqual(['tool', 'user']);
    expect(JSON.stringify(conversation[conversation.length - 1].content)).toContain(`steer-${m}`);

    // interrupt
    const i = randomUUID();
    await sim.script({
      match: `slow-${i}`,
      replies: [{ content: 'never finished', latency: { firstByteMs: 20_000 } }],
    });
    await sim.script({ match: `interrupt-${i}`, matchIn: 'last_user', replies: [{ content: 'interrupt answered' }] });
    const from = ws.frames.length;
    ws.send({ type: 'message', client_message_id: `d-${i}`, content: `slow-${i}` });
    await ws.waitFor((f) => f.type === 'user_message' && f.content === `slow-${i}`);
    ws.send({ type: 'message', client_message_id: `e-${i}`, content: `interrupt-${i}`, delivery: 'interrupt' });
    await ws.waitFor((f) => f.type === 'done' && f.content === 'interrupt answered', 30_000);
    const later = ws.frames
      .slice(from)
      .filter((f) => isSessionEvent(f))
      .map((f) => (f.type === 'user_message' ? `user:${String(f.content)}` : f.type));
    expect(later).toEqual([`user:slow-${i}`, 'error', `user:interrupt-${i}`, 'done']);
    ws.close();
  });

  it('a socket dropped mid-turn and reconnected to another gateway replica sees every session event exactly once', async () => {
    const api = await admin.createUser(`r-${randomUUID()}@skald.test`, 'correct horse battery');
    const [gw1, gw2] = stack.byName('gateway');
    const ws1 = await WsTestClient.connect(gw1.url, { token: api.token });
    const sessionId = (await ws1.waitForType('hello')).session_id as string;
    const m = `resume-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { content: 'looking', tool_calls: [{ name: 'list_files', arguments: {} }], latency: { firstByteMs: 200 } },
        {
          content: 'still looking',
          tool_calls: [{ name: 'list_files', arguments: {} }],
          latency: { firstByteMs: 1500 },
        },
        { content: 'all done', latency: { firstByteMs: 1000 } },
      ],
    });
    ws1.send({ type: 'message', client_message_id: m, content: `work ${m}` });
    await ws1.waitForType('tool_done');
    ws1.ws.terminate();
    const seen1 = ws1.frames.filter(isSessionEvent);
    const lastSeq = Math.max(...seen1.map((f) => f.seq as number));

    const ws2 = await WsTestClient.connect(gw2.url, { token: api.token });
    await ws2.waitForType('hello');
    ws2.send({ type: 'resume', session_id: sessionId, last_seq: lastSeq });
    await ws2.waitFor((f) => f.type === 'done', 30_000);
    const seen2 = ws2.frames.filter(isSessionEvent);
    const all = [...seen1, ...seen2].map((f) => f.seq as number);
    const stored: Array<{ n: number }> = await db.query(
      `SELECT count(*)::int AS n FROM session_events WHERE session_id = $1`,
      [sessionId],
    );
    expect(all).toEqual(Array.from({ length: stored[0].n }, (_, k) => k + 1));
    expect(seen2.every((f) => (f.seq as number) > lastSeq)).toBe(true);
    const running = ws2.frames.find(
      (f) => f.type === 'turn_running' && ws2.frames.indexOf(f) > ws2.frames.findIndex((x) => x.type === 'hello'),
    );
    expect(running).toBeDefined();
    ws2.close();
  });
});

describe('no session worker answering', () => {
  let stack: Stack;
  afterAll(async () => {
    await stack?.stop();
  });

  it('answers 503 with Retry-After and acknowledges nothing; the retry with the same id is accepted once a worker runs', async () => {
    stack = await Stack.start({ root: ROOT, replicas: { 'session-worker': 0 } });
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    const id = `retry-${randomUUID()}`;
    const r = await admin.request('POST', '/api/web/messages', { client_message_id: id, content: 'hello?' });
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('2');
    expect(r.body).toMatchObject({ error: { code: 'unavailable' } });
    const db = await testDb();
    const rows: Array<{ n: number }> = await db.query(
      `SELECT count(*)::int AS n FROM session_inbox WHERE client_message_id = $1`,
      [id],
    );
    expect(rows[0].n).toBe(0);
    await stack.addReplica('session-worker');
    const again = await admin.post<{ duplicate: boolean }>('/api/web/messages', {
      client_message_id: id,
      content: 'hello?',
    });
    expect(again.status).toBe(202);
    const twice = await admin.post<{ duplicate: boolean }>('/api/web/messages', {
      client_message_id: id,
      content: 'hello?',
    });
    expect(twice.status).toBe(200);
    expect(twice.body.duplicate).toBe(true);
    await db.destroy();
  });
});
