import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { SESSION_EVENT_HISTORY, type SessionEventType } from '@skald/contracts';
import { ApiClient, Frame, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(120_000);

const SESSION_EVENT_TYPES = new Set([
  'user_message',
  'thinking',
  'tool_start',
  'tool_done',
  'tool_error',
  'done',
  'error',
]);

function sessionEvents(ws: WsTestClient, sessionId: string): Frame[] {
  return ws.frames.filter((f) => SESSION_EVENT_TYPES.has(f.type) && f.session_id === sessionId);
}

function putFile(stack: Stack, userId: string, name: string, content: string): void {
  const dir = path.join(stack.env.SKALD_WORKSPACES, userId);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(path.join(dir, name), content);
}

describe('one turn end to end: five apps and llm-sim as separate processes', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });

  afterAll(async () => {
    await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  it('a message becomes user_message, tool_start, tool_done, done with increasing seq, and the debug tree shows it', async () => {
    const alice = await admin.createUser(`alice-${randomUUID()}@skald.test`, 'correct horse battery');
    putFile(stack, alice.user!.id, 'notes.txt', 'the launch code is 4242\n');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: alice.token, source: 'web' });
    const hello = await ws.waitForType('hello');
    const sessionId = hello.session_id as string;
    await ws.waitForType('turn_running');

    const marker = `m-${randomUUID()}`;
    await sim.script({
      match: marker,
      replies: [
        { content: 'Let me look.', tool_calls: [{ name: 'read_file', arguments: { path: 'notes.txt' } }] },
        { content: 'The launch code is 4242.' },
      ],
    });
    ws.send({ type: 'message', client_message_id: `c-${marker}`, content: `What is in notes.txt? ${marker}` });

    const ack = await ws.waitForType('ack');
    expect(ack).toMatchObject({ client_message_id: `c-${marker}`, duplicate: false });
    const done = await ws.waitForType('done');
    expect(done.content).toBe('The launch code is 4242.');

    const events = sessionEvents(ws, sessionId);
    expect(events.map((e) => e.type)).toEqual(['user_message', 'thinking', 'tool_start', 'tool_done', 'done']);
    const seqs = events.map((e) => e.seq as number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(events[0]).toMatchObject({ message_id: ack.message_id, content: `What is in notes.txt? ${marker}` });
    expect(events[2]).toMatchObject({ name: 'read_file', arguments: { path: 'notes.txt' } });
    expect(events[3].result).toContain('the launch code is 4242');
    expect(events[3].tool_call_id).toBe(events[2].tool_call_id);

    // The model saw the file's content as the tool result, answering its own call id.
    const requests = await sim.requests({ contains: marker });
    expect(requests).toHaveLength(2);
    const second = requests[1].body as {
      messages: Array<{ role: string; content?: unknown; tool_call_id?: string; tool_calls?: Array<{ id: string }> }>;
    };
    const assistant = second.messages.find((m) => m.role === 'assistant' && m.tool_calls);
    const toolMsg = second.messages.find((m) => m.role === 'tool');
    expect(toolMsg?.tool_call_id).toBe(assistant?.tool_calls?.[0].id);
    expect(String(toolMsg?.content)).toContain('the launch code is 4242');

    const tree = await alice.get<{ session: { id: string; source: string }; messages: Array<Record<string, unknown>> }>(
      `/api/sessions/${sessionId}`,
    );
    expect(tree.status).toBe(200);
    expect(tree.body.session).toMatchObject({ id: sessionId, source: 'web' });
    expect(tree.body.messages.map((m) => m.kind)).toEqual(['user', 'thinking', 'tool', 'assistant']);
    expect(tree.body.messages[2]).toMatchObject({
      name: 'read_file',
      status: 'done',
      arguments: { path: 'notes.txt' },
    });
    expect(tree.body.messages[3]).toMatchObject({ content: 'The launch code is 4242.', is_synthetic: false });

    const list = await alice.get<{ items: Array<{ id: string; message_count: number }>; total: number }>(
      '/api/sessions?source=web',
    );
    expect(list.body.total).toBe(1);
    expect(list.body.items[0]).toMatchObject({ id: sessionId, message_count: 3 });

    // Every event is stored with the same seq the socket saw.
    const stored: Array<{ seq: string; type: string }> = await db.query(
      `SELECT seq, type FROM session_events WHERE session_id = $1 ORDER BY seq`,
      [sessionId],
    );
    expect(stored.map((r) => [Number(r.seq), r.type])).toEqual(events.map((e) => [e.seq, e.type]));

    // The reloaded chat shows each event where SESSION_EVENT_HISTORY says it does.
    const page = await alice.get<{ items: Array<{ id: string; tool_calls?: Array<{ id: string; status: string }> }> }>(
      '/api/web/messages',
    );
    const rows = new Set(page.body.items.map((m) => m.id));
    const calls = new Set(page.body.items.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)));
    const stored2: Array<{ type: SessionEventType; payload: string }> = await db.query(
      `SELECT type, payload FROM session_events WHERE session_id = $1 ORDER BY seq`,
      [sessionId],
    );
    const places = stored2.map((e) => {
      const payload = JSON.parse(e.payload) as { message_id?: string; tool_call_id?: string };
      const place = SESSION_EVENT_HISTORY[e.type].in;
      if (place === 'message') return [e.type, rows.has(String(payload.message_id))];
      if (place === 'tool_call') return [e.type, calls.has(String(payload.tool_call_id))];
      return [e.type, place];
    });
    expect(places).toEqual([
      ['user_message', true],
      ['thinking', true],
      ['tool_start', true],
      ['tool_done', true],
      ['done', true],
    ]);
    ws.close();
  });

  it('a repeated client_message_id is stored once and acknowledged as a duplicate', async () => {
    const bob = await admin.createUser(`bob-${randomUUID()}@skald.test`, 'correct horse battery');
    const marker = `m-${randomUUID()}`;
    await sim.script({ match: marker, replies: [{ content: 'Hello once.' }] });
    const first = await bob.post<{ message_id: string; duplicate: boolean }>('/api/web/messages', {
      client_message_id: marker,
      content: `hi ${marker}`,
    });
    const again = await bob.post<{ message_id: string; duplicate: boolean }>('/api/web/messages', {
      client_message_id: marker,
      content: `hi ${marker}`,
    });
    expect(first.status).toBe(202);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ message_id: first.body.message_id, duplicate: true });
    const rows: Array<{ n: number }> = await db.query(
      `SELECT count(*)::int AS n FROM session_inbox WHERE user_id = $1`,
      [bob.user!.id],
    );
    expect(rows[0].n).toBe(1);
  });

  describe('two users', () => {
    it("B's sockets never receive A's events, and B asking for A's session gets 404", async () => {
      const a = await admin.createUser(`a-${randomUUID()}@skald.test`, 'correct horse battery');
      const b = await admin.createUser(`b-${randomUUID()}@skald.test`, 'correct horse battery');
      const wsA = await WsTestClient.connect(stack.gatewayUrl, { token: a.token });
      const wsB = await WsTestClient.connect(stack.gatewayUrl, { token: b.token });
      const wsB2 = await WsTestClient.connect(stack.gatewayUrl, { token: b.token, source: 'cli' });
      const sessionA = (await wsA.waitForType('hello')).session_id as string;
      const sessionB = (await wsB.waitForType('hello')).session_id as string;
      await wsB2.waitForType('hello');
      expect(sessionB).not.toBe(sessionA);

      const marker = `m-${randomUUID()}`;
      await sim.script({ match: marker, replies: [{ content: `secret for A only ${marker}` }] });
      wsA.send({ type: 'message', client_message_id: marker, content: `tell me ${marker}` });
      await wsA.waitForType('done');
      expect(wsA.frames.some((f) => f.type === 'token_delta')).toBe(true);
      // Give the fan-out a moment to have delivered anything it wrongly would.
      await new Promise((r) => setTimeout(r, 500));
      for (const ws of [wsB, wsB2]) {
        expect(ws.frames.filter((f) => f.session_id === sessionA)).toEqual([]);
        expect(JSON.stringify(ws.frames)).not.toContain(marker);
      }

      const detail = await b.get<{ error: { code: string } }>(`/api/sessions/${sessionA}`);
      expect(detail.status).toBe(404);
      expect(detail.body.error.code).toBe('not_found');
      const missing = await b.get(`/api/sessions/${randomUUID()}`);
      expect(missing.status).toBe(404);
      const listB = await b.get<{ items: Array<{ id: string }> }>('/api/sessions');
      expect(listB.body.items.map((s) => s.id)).not.toContain(sessionA);

      wsB.send({ type: 'resume', session_id: sessionA, last_seq: 0 });
      const err = await wsB.waitForType('error');
      expect(err).toMatchObject({ code: 'not_found' });
      expect(wsB.frames.filter((f) => f.session_id === sessionA)).toEqual([]);
      for (const ws of [wsA, wsB, wsB2]) ws.close();
    });
  });
});

describe('two session-worker replicas, many sessions', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT, replicas: { 'session-worker': 2 } });
    sim = new LlmSimAdminClient(stack.simUrl);
    db = await testDb();
  });

  afterAll(async () => {
    await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  it('handles each message exactly once and both replicas drive turns', async () => {
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    const users = await Promise.all(
      [0, 1, 2, 3].map((i) => admin.createUser(`r${i}-${randomUUID()}@skald.test`, 'correct horse battery')),
    );
    const sources = ['web', 'mobile', 'cli', 'tui', 'ide', 'bot'];
    const batch = `b-${randomUUID()}`;
    await sim.script({
      match: batch,
      replies: [{ content: `answer ${batch}`, latency: { firstByteMs: 150 } }],
      repeatLast: true,
    });

    const sockets: Array<{ ws: WsTestClient; sessionId: string; cmid: string; userId: string }> = [];
    for (const u of users) {
      for (const source of sources) {
        const ws = await WsTestClient.connect(stack.gatewayUrl, { token: u.token, source });
        const sessionId = (await ws.waitForType('hello')).session_id as string;
        sockets.push({ ws, sessionId, cmid: `${batch}-${u.user!.id}-${source}`, userId: u.user!.id });
      }
    }
    for (const s of sockets) s.ws.send({ type: 'message', client_message_id: s.cmid, content: `question ${batch}` });
    await Promise.all(sockets.map((s) => s.ws.waitForType('done', 60_000)));

    for (const s of sockets) {
      const events = sessionEvents(s.ws, s.sessionId);
      expect(events.map((e) => e.type)).toEqual(['user_message', 'done']);
      const counts: Array<{ users: number; assistants: number; inbox: number; done_events: number }> = await db.query(
        `SELECT (SELECT count(*)::int FROM chat_history WHERE session_id = $1 AND role = 'user') AS users,
                (SELECT count(*)::int FROM chat_history WHERE session_id = $1 AND role = 'assistant') AS assistants,
                (SELECT count(*)::int FROM session_inbox WHERE session_id = $1 AND status = 'entered') AS inbox,
                (SELECT count(*)::int FROM session_events WHERE session_id = $1 AND type = 'done') AS done_events`,
        [s.sessionId],
      );
      expect(counts[0]).toEqual({ users: 1, assistants: 1, inbox: 1, done_events: 1 });
    }
    // The LLM was asked exactly once per message.
    expect(await sim.requests({ contains: batch })).toHaveLength(sockets.length);

    const drivers = stack
      .byName('session-worker')
      .map(
        (p) =>
          p.logs.filter((l) => l.includes('"turn started"') && sockets.some((s) => l.includes(s.sessionId))).length,
      );
    expect(drivers).toHaveLength(2);
    expect(drivers[0]).toBeGreaterThan(0);
    expect(drivers[1]).toBeGreaterThan(0);
    expect(drivers[0] + drivers[1]).toBe(sockets.length);
    for (const s of sockets) s.ws.close();
  });
});
