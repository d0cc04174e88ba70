import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(180_000);

/**
 * A finished async task's result is never lost: it waits in the parent's inbox while the parent's
 * turn runs, and survives a `/stop`, an `interrupt` and a `/new` of that conversation.
 */
describe('async results survive /stop, interrupt and /new', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  const SOURCE = 'web';

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      env: { SKALD_LEASE_TTL_MS: '3000', SKALD_SWEEP_INTERVAL_MS: '1000' },
      perApp: { scheduler: { SKALD_JOB_POLL_MS: '300', SKALD_JOB_RECONCILE_MS: '2000' } },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
    await db.query(
      `INSERT INTO approval_rules (id, tool_pattern, source, action, priority, note, name) VALUES ($1, 'execute_task', $2, 'allow', 1, 'async delivery test', 'test rule')`,
      [randomUUID(), SOURCE],
    );
  });
  afterAll(async () => {
    if (db) {
      await db.query(`DELETE FROM approval_rules WHERE note = 'async delivery test'`);
      await assertInvariantsAndClose(db);
    }
    await stack?.stop();
  });

  /**
   * A parent turn starts an async task, then waits on a model that does not answer; the task
   * finishes and its delivery is queued in the parent's inbox while the turn still runs.
   */
  async function deliveryWaitingInARunningTurn(m: string) {
    const api = await admin.createUser(`d-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: SOURCE });
    const parent = (await ws.waitForType('hello')).session_id as string;
    await sim.script({
      match: `[P-${m}]`,
      replies: [
        {
          tool_calls: [
            {
              name: 'execute_task',
              arguments: { agent_id: 'generalist', prompt: `Find it [C-${m}]`, title: 'Find it', mode: 'async' },
            },
          ],
        },
        { content: 'never seen', latency: { firstByteMs: 120_000 } },
      ],
    });
    await sim.script({ match: `[C-${m}]`, replies: [{ content: `The answer is 42 [R-${m}].` }] });
    ws.send({ type: 'message', client_message_id: `c-${m}`, content: `Research this [P-${m}]` });
    for (let i = 0; ; i++) {
      const rows = await db.query<unknown[]>(
        `SELECT 1 FROM session_inbox WHERE session_id = $1 AND status = 'queued' AND tool_result IS NOT NULL`,
        [parent],
      );
      if (rows.length > 0) break;
      if (i > 600) throw new Error('the task result was never delivered');
      await new Promise((r) => setTimeout(r, 100));
    }
    return { api, ws, parent };
  }

  const deliveredIn = async (sessionId: string) =>
    db.query<Array<{ status: string; result: string }>>(
      `SELECT status, result FROM tool_calls WHERE session_id = $1 AND name = 'task_completed'`,
      [sessionId],
    );

  it('/stop: the turn ends interrupted, the result is not discarded and enters the next turn, which answers it', async () => {
    const m = randomUUID();
    const { ws, parent } = await deliveryWaitingInARunningTurn(m);
    await sim.script({ match: `[R-${m}]`, replies: [{ content: 'After the stop: the task found 42.' }] });
    ws.send({ type: 'message', client_message_id: `s-${m}`, content: '/stop' });
    await ws.waitFor((f) => f.type === 'error' && f.code === 'interrupted', 20_000);
    await ws.waitFor((f) => f.type === 'done' && f.content === 'After the stop: the task found 42.', 30_000);
    expect(ws.frames.filter((f) => f.type === 'message_discarded')).toEqual([]);
    expect(await deliveredIn(parent)).toEqual([{ status: 'done', result: `The answer is 42 [R-${m}].` }]);
    ws.close();
  });

  it('interrupt: the interrupting message starts the next turn and the result enters it too', async () => {
    const m = randomUUID();
    const { ws, parent } = await deliveryWaitingInARunningTurn(m);
    await sim.script({ match: `[I-${m}]`, replies: [{ content: 'Doing that instead; the task found 42.' }] });
    ws.send({
      type: 'message',
      client_message_id: `i-${m}`,
      content: `Stop, do this instead [I-${m}]`,
      delivery: 'interrupt',
    });
    await ws.waitFor((f) => f.type === 'done' && f.content === 'Doing that instead; the task found 42.', 30_000);
    expect(await deliveredIn(parent)).toEqual([{ status: 'done', result: `The answer is 42 [R-${m}].` }]);
    // One turn took both: the model's request held the user's message and the task's result.
    const asked = (await sim.requests({ contains: `[I-${m}]` })).map((r) => JSON.stringify(r.body));
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain(`The answer is 42 [R-${m}].`);
    ws.close();
  });

  it('/new: the result goes to the new conversation of the home source, not the reset one', async () => {
    const m = randomUUID();
    const { ws, parent } = await deliveryWaitingInARunningTurn(m);
    await sim.script({ match: `[R-${m}]`, replies: [{ content: 'In the new conversation: the task found 42.' }] });
    ws.send({ type: 'message', client_message_id: `n-${m}`, content: '/new' });
    const fresh = (await ws.waitForType('new_session', 20_000)).session_id as string;
    // As a client does on `new_session` (shared/PROTOCOL.md: without last_seq nothing is replayed,
    // history comes by REST): the new conversation from its start — its turn may have begun before
    // this socket was switched to it.
    ws.send({ type: 'resume', session_id: fresh, last_seq: 0 });
    await ws.waitFor((f) => f.type === 'done' && f.content === 'In the new conversation: the task found 42.', 30_000);
    expect(await deliveredIn(fresh)).toEqual([{ status: 'done', result: `The answer is 42 [R-${m}].` }]);
    expect(await deliveredIn(parent)).toEqual([]);
    ws.close();
  });
});
