import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(600_000);

const USERS = 20;
const SOURCES = ['web', 'mobile', 'cli', 'tui', 'ide', 'bot', 'mail', 'chat', 'desk', 'car'];

/**
 * Three session-worker replicas, 200 sessions, each sent 3 messages at once from 2 sockets:
 * every message enters its conversation exactly once and is answered, and no two workers ever
 * drove one session at the same time (the epochs stamped on its history never decrease).
 */
describe('three replicas under load', () => {
  let stack: Stack;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      replicas: { 'session-worker': 3, gateway: 2 },
      env: { LOG_LEVEL: 'warn', DATABASE_POOL_SIZE: '4' },
    });
    db = await testDb();
  });
  afterAll(async () => {
    await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  it('200 sessions × 3 messages from 2 sockets: each handled exactly once, never by two drivers at once', async () => {
    const sim = new LlmSimAdminClient(stack.simUrl);
    const batch = `load-${randomUUID()}`;
    await sim.script({
      match: batch,
      replies: [{ content: `answer ${batch}`, latency: { firstByteMs: 20 } }],
      repeatLast: true,
    });
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    const users = await Promise.all(
      Array.from({ length: USERS }, (_, i) =>
        admin.createUser(`load${i}-${randomUUID()}@skald.test`, 'correct horse battery'),
      ),
    );
    const [gw1, gw2] = stack.byName('gateway');

    const sessions: Array<{ sessionId: string; sockets: WsTestClient[]; cmids: string[] }> = [];
    for (const u of users) {
      await Promise.all(
        SOURCES.map(async (source) => {
          const a = await WsTestClient.connect(gw1.url, { token: u.token, source });
          const b = await WsTestClient.connect(gw2.url, { token: u.token, source });
          const sessionId = (await a.waitForType('hello')).session_id as string;
          expect((await b.waitForType('hello')).session_id).toBe(sessionId);
          sessions.push({ sessionId, sockets: [a, b], cmids: [0, 1, 2].map((k) => `${batch}-${sessionId}-${k}`) });
        }),
      );
    }
    expect(sessions).toHaveLength(200);

    const started = Date.now();
    for (const s of sessions) {
      s.sockets[0].send({ type: 'message', client_message_id: s.cmids[0], content: `one ${batch}` });
      s.sockets[1].send({ type: 'message', client_message_id: s.cmids[1], content: `two ${batch}` });
      s.sockets[0].send({ type: 'message', client_message_id: s.cmids[2], content: `three ${batch}` });
    }
    // Every message was acknowledged on the socket that sent it.
    await Promise.all(
      sessions.flatMap((s) => [
        s.sockets[0].waitFor((f) => f.type === 'ack' && f.client_message_id === s.cmids[0], 120_000),
        s.sockets[1].waitFor((f) => f.type === 'ack' && f.client_message_id === s.cmids[1], 120_000),
        s.sockets[0].waitFor((f) => f.type === 'ack' && f.client_message_id === s.cmids[2], 120_000),
      ]),
    );
    // Wait until every session has all three messages in and its turn finished.
    const deadline = Date.now() + 240_000;
    for (;;) {
      const pending: Array<{ n: number }> = await db.query(
        `SELECT count(*)::int AS n FROM sessions s
          WHERE s.id = ANY($1::uuid[])
            AND (s.turn_state <> 'finished' OR EXISTS (SELECT 1 FROM session_inbox i WHERE i.session_id = s.id AND i.status = 'queued'))`,
        [sessions.map((s) => s.sessionId)],
      );
      if (pending[0].n === 0) break;
      if (Date.now() > deadline) throw new Error(`${pending[0].n} sessions still busy`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const elapsed = Date.now() - started;

    const rows: Array<{
      session_id: string;
      users: number;
      distinct_cmids: number;
      assistants: number;
      last_role: string;
      entered: number;
      done_events: number;
    }> = await db.query(
      `SELECT s.id AS session_id,
                (SELECT count(*)::int FROM chat_history h WHERE h.session_id = s.id AND h.role = 'user') AS users,
                (SELECT count(DISTINCT client_message_id)::int FROM chat_history h WHERE h.session_id = s.id AND h.role = 'user') AS distinct_cmids,
                (SELECT count(*)::int FROM chat_history h WHERE h.session_id = s.id AND h.role = 'assistant') AS assistants,
                (SELECT role FROM chat_history h WHERE h.session_id = s.id ORDER BY ord DESC LIMIT 1) AS last_role,
                (SELECT count(*)::int FROM session_inbox i WHERE i.session_id = s.id AND i.status = 'entered') AS entered,
                (SELECT count(*)::int FROM session_events e WHERE e.session_id = s.id AND e.type = 'done') AS done_events
           FROM sessions s WHERE s.id = ANY($1::uuid[])`,
      [sessions.map((s) => s.sessionId)],
    );
    expect(rows).toHaveLength(200);
    for (const r of rows) {
      expect({
        id: r.session_id,
        users: r.users,
        distinct: r.distinct_cmids,
        entered: r.entered,
        last: r.last_role,
      }).toEqual({
        id: r.session_id,
        users: 3,
        distinct: 3,
        entered: 3,
        last: 'assistant',
      });
      expect(r.assistants).toBeGreaterThanOrEqual(1);
      expect(r.done_events).toBe(r.assistants);
    }
    // One LLM call per answer: nothing was driven twice.
    const answers = rows.reduce((n, r) => n + r.assistants, 0);
    expect(await sim.requests({ contains: batch })).toHaveLength(answers);
    // The replicas shared the driving (from their own metrics).
    const perWorker = await Promise.all(
      stack.byName('session-worker').map(async (w) => {
        const text = await (await fetch(`${w.url}/metrics`)).text();
        return Number(/^skald_turns_started_total(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0);
      }),
    );
    console.log(
      `load: 200 sessions, 600 messages, ${answers} answers in ${elapsed} ms; turns started per worker: ${perWorker.join(', ')}`,
    );
    expect(perWorker.reduce((a, b) => a + b, 0)).toBe(answers);
    // Replicas race for each session's lease, so the split is uneven (seen: 1 / 75 / 124, and once
    // 83 / 0 / 117 on a loaded 2-core machine): the work is shared, but no replica is owed a part.
    expect(perWorker.filter((n) => n > 0).length).toBeGreaterThanOrEqual(2);
    for (const s of sessions) for (const ws of s.sockets) ws.close();
  });
});
