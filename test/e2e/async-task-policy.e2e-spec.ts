import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { until } from '../support/until';

jest.setTimeout(180_000);

const NOTE = 'async-task-policy e2e';

/**
 * Delegating work never leaves the rules an admin put a conversation under: a
 * conversation in a security group whose rule denies `read_file` under its working directory
 * delegates a read of a relative path to a sub-agent — synchronously (it runs in the conversation's
 * own session) or as an async task (a session of its own, which takes the parent's group and
 * working directory at its fire) — and the gate denies the read by that rule.
 */
describe("delegated work runs under the parent conversation's security group", () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      perApp: { scheduler: { SKALD_JOB_POLL_MS: '300', SKALD_JOB_RECONCILE_MS: '2000' } },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
    await db.query(
      `INSERT INTO approval_rules (id, tool_pattern, source, action, priority, note, name) VALUES ($1, 'execute_task', 'web', 'allow', 1, $2, 'test rule')`,
      [randomUUID(), NOTE],
    );
  });
  afterAll(async () => {
    if (db) {
      await db.query(`DELETE FROM approval_rules WHERE note = $1`, [NOTE]);
      await assertInvariantsAndClose(db);
    }
    await stack?.stop();
  });

  /** A user's conversation that an admin put in a fresh group whose rule denies `read_file`. */
  async function lockedConversation() {
    const group = `locked-${randomUUID().slice(0, 8)}`;
    const rule = await admin.post<{ id: string }>('/api/approval/rules', {
      // a path condition keeps the tool offered (an unconditional deny hides it from the model);
      // the relative path the model sends lands under it only through the working directory
      tool_pattern: 'read_file',
      path_pattern: '/workspace/proj/**',
      security_group: group,
      action: 'deny',
      priority: 1,
      note: NOTE,
    });
    expect(rule.status).toBe(201);
    const user = await admin.createUser(`p-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: user.token, source: 'web' });
    const parent = (await ws.waitForType('hello')).session_id as string;
    // the row as an admin's PUT /sessions/{id}/run-context leaves it (an admin sets the group)
    await db.query(
      `UPDATE sessions SET security_group = $2, run_context = '{"working_directory":"/workspace/proj"}' WHERE id = $1`,
      [parent, group],
    );
    return { ws, parent, group, ruleId: rule.body.id };
  }

  const readsAudited = (sessionId: string) =>
    until(
      'the read to be audited',
      async () => {
        const rows = await db.query<Array<{ decision: string; by: string; rule_id: string | null }>>(
          `SELECT decision, by, rule_id FROM approval_audit WHERE session_id = $1 AND tool_name = 'read_file'`,
          [sessionId],
        );
        return rows.length > 0 ? rows : null;
      },
      60_000,
    );

  it("an async task's session has the parent's group and the group's rule denies its read", async () => {
    const { ws, parent, group, ruleId } = await lockedConversation();
    const m = randomUUID();
    await sim.script({
      match: `[P-${m}]`,
      replies: [
        {
          tool_calls: [
            {
              name: 'execute_task',
              arguments: { agent_id: 'generalist', prompt: `Read the notes [C-${m}]`, title: 'notes', mode: 'async' },
            },
          ],
        },
        { content: 'Started.' },
      ],
    });
    await sim.script({
      match: `[C-${m}]`,
      replies: [
        { tool_calls: [{ name: 'read_file', arguments: { path: 'notes.txt' } }] },
        { content: `Could not read them [R-${m}].` },
      ],
    });
    ws.send({ type: 'message', client_message_id: `c-${m}`, content: `Research this [P-${m}]` });
    const [task] = await until('the task session', async () => {
      const rows = await db.query<Array<{ session_id: string }>>(
        `SELECT r.session_id FROM job_runs r JOIN scheduled_jobs j ON j.id = r.job_id
          WHERE j.parent_session_id = $1 AND r.session_id IS NOT NULL`,
        [parent],
      );
      return rows.length > 0 ? rows : null;
    });
    const [row] = await db.query<Array<{ security_group: string | null; run_context: unknown }>>(
      `SELECT security_group, run_context FROM sessions WHERE id = $1`,
      [task.session_id],
    );
    expect(row).toEqual({ security_group: group, run_context: { working_directory: '/workspace/proj' } });
    expect(await readsAudited(task.session_id)).toEqual([{ decision: 'deny', by: 'rule', rule_id: ruleId }]);
    ws.close();
  });

  it('a sync sub-agent runs in the conversation itself: the same rule denies its read', async () => {
    const { ws, parent, ruleId } = await lockedConversation();
    const m = randomUUID();
    await sim.script({
      match: `[P-${m}]`,
      replies: [
        {
          tool_calls: [
            { name: 'execute_task', arguments: { agent_id: 'generalist', prompt: `Read the notes [C-${m}]` } },
          ],
        },
        { content: 'Done.' },
      ],
    });
    await sim.script({
      match: `[C-${m}]`,
      replies: [
        { tool_calls: [{ name: 'read_file', arguments: { path: 'notes.txt' } }] },
        { content: `Could not read them [R-${m}].` },
      ],
    });
    ws.send({ type: 'message', client_message_id: `c-${m}`, content: `Research this [P-${m}]` });
    expect(await readsAudited(parent)).toEqual([{ decision: 'deny', by: 'rule', rule_id: ruleId }]);
    ws.close();
  });
});
