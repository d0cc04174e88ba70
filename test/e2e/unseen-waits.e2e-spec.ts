import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, Frame, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(180_000);

/** What the issue promises: a dead or silent dependency ends its call within this, visibly. */
const RECOVERY_TARGET_MS = 10_000;

/**
 * Nothing waits forever unseen: a tool runner killed or frozen mid-command, and an approval
 * service that does not answer, each end the call (interrupted / failed, with a sentence the user
 * sees) within 10 s and the turn goes on; a parked turn whose answer's doorbell was lost is found
 * by the sweep even behind more parked turns than one sweep page.
 */
describe('nothing waits forever unseen', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  const SOURCE = 'unseen';
  const decoyUser = randomUUID();

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      env: { SKALD_LEASE_TTL_MS: '3000', SKALD_SWEEP_INTERVAL_MS: '1000', SKALD_HUMAN_POLL_MS: '500' },
      perApp: { 'session-worker': { SKALD_PARK_AFTER: '1' } },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
    await db.query(
      `INSERT INTO approval_rules (id, tool_pattern, source, action, priority, note, name) VALUES ($1, 'execute_cmd', $2, 'allow', 1, 'unseen test', 'test rule')`,
      [randomUUID(), SOURCE],
    );
  });

  afterAll(async () => {
    if (db) {
      await db.query(`DELETE FROM approval_rules WHERE note = 'unseen test'`);
      await db.query(`UPDATE sessions SET turn_state = 'finished' WHERE user_id = $1`, [decoyUser]);
      await assertInvariantsAndClose(db);
    }
    await stack?.stop();
  });

  async function open(source = SOURCE): Promise<{ api: ApiClient; ws: WsTestClient; sessionId: string }> {
    const api = await admin.createUser(`u-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    return { api, ws, sessionId };
  }

  const callsOf = (sessionId: string) =>
    db.query<Array<{ name: string; status: string; result: string | null }>>(
      `SELECT name, status, result FROM tool_calls WHERE session_id = $1 ORDER BY created_at`,
      [sessionId],
    );

  const liveRunner = () =>
    stack.byName('tool-runner').find((p) => p.child.exitCode === null && p.child.signalCode === null);

  async function commandWhileRunnerFails(
    fault: 'SIGKILL' | 'SIGSTOP',
  ): Promise<{ elapsed: number; error: Frame; sessionId: string; m: string }> {
    const { ws, sessionId } = await open();
    const m = `r-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: 'echo started; sleep 60', timeout: 120 } }] },
        { content: 'carried on after the runner was lost' },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `run ${m}` });
    await ws.waitForType('tool_start');
    await ws.waitForType('tool_progress', 10_000);
    const runner = liveRunner();
    if (!runner) throw new Error('no live tool runner');
    const faultAt = Date.now();
    runner.child.kill(fault);
    const error = await ws.waitForType('tool_error', 30_000);
    const elapsed = Date.now() - faultAt;
    await ws.waitFor((f) => f.type === 'done' && f.content === 'carried on after the runner was lost', 20_000);
    ws.close();
    if (fault === 'SIGSTOP') runner.child.kill('SIGCONT');
    return { elapsed, error, sessionId, m };
  }

  it('a tool runner killed mid-command: the call ends interrupted within 10 s, the user sees why, the turn goes on', async () => {
    const { elapsed, error, sessionId, m } = await commandWhileRunnerFails('SIGKILL');
    expect(elapsed).toBeLessThan(RECOVERY_TARGET_MS);
    expect(String(error.error)).toContain('the tool runner stopped answering');
    expect(await callsOf(sessionId)).toEqual([expect.objectContaining({ name: 'execute_cmd', status: 'interrupted' })]);
    // The model read that the command may or may not have run.
    const second = (await sim.requests({ contains: m }))[1].body as {
      messages: Array<{ role: string; content: unknown }>;
    };
    expect(JSON.stringify(second.messages.find((x) => x.role === 'tool')?.content)).toContain('stopped answering');
    await stack.addReplica('tool-runner');
  });

  it('a tool runner frozen mid-command (SIGSTOP): the call ends interrupted within 10 s and is never re-run', async () => {
    const { elapsed, error, sessionId } = await commandWhileRunnerFails('SIGSTOP');
    expect(elapsed).toBeLessThan(RECOVERY_TARGET_MS);
    expect(String(error.error)).toContain('may or may not have taken effect');
    expect(await callsOf(sessionId)).toEqual([expect.objectContaining({ name: 'execute_cmd', status: 'interrupted' })]);
  });

  it('an approval service that does not answer: the call fails (not run) within 10 s with a sentence the user sees, the turn goes on', async () => {
    const { ws, sessionId } = await open();
    const m = `a-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: 'echo never > /tmp/never' } }] },
        { content: 'the approval service is down' },
      ],
    });
    const approval = stack.byName('approval-service')[0];
    approval.child.kill('SIGSTOP');
    try {
      ws.send({ type: 'message', client_message_id: m, content: `check ${m}` });
      await ws.waitForType('tool_start', 30_000);
      const started = Date.now();
      const error = await ws.waitForType('tool_error', 30_000);
      expect(Date.now() - started).toBeLessThan(RECOVERY_TARGET_MS);
      expect(String(error.error)).toContain('The approval check did not answer');
      await ws.waitFor((f) => f.type === 'done' && f.content === 'the approval service is down', 30_000);
    } finally {
      approval.child.kill('SIGCONT');
    }
    expect(await callsOf(sessionId)).toEqual([expect.objectContaining({ name: 'execute_cmd', status: 'failed' })]);
    ws.close();
  });

  it('a parked turn whose doorbell was lost is resumed by the sweep behind more parked turns than one page', async () => {
    const { ws, sessionId } = await open('web');
    const m = `p-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'write_file', arguments: { path: 'later.txt', content: 'later' } }] },
        { content: 'resumed by the sweep' },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `park ${m}` });
    const card = await ws.waitForType('pending_write');
    for (let i = 0; ; i++) {
      const [row] = await db.query<Array<{ turn_state: string; owner: string | null }>>(
        `SELECT s.turn_state, l.owner FROM sessions s LEFT JOIN session_leases l ON l.session_id = s.id WHERE s.id = $1`,
        [sessionId],
      );
      if (row.turn_state === 'parked' && row.owner === null) break;
      if (i > 100) throw new Error(`never parked: ${JSON.stringify(row)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Thirty older parked turns that sort before it (by id and by age): three sweep pages.
    for (let i = 0; i < 30; i++) {
      await db.query(
        `INSERT INTO sessions (id, user_id, source, turn_state, is_active, updated_at)
         VALUES ($1, $2, $3, 'parked', false, now() - interval '1 day')`,
        [`00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, decoyUser, `decoy${i}`],
      );
    }
    // The human answers, but the doorbell is lost: only the row says so.
    await db.query(`UPDATE approval_requests SET status = 'approved', resolved_at = now() WHERE id = $1`, [
      card.request_id,
    ]);
    await ws.waitFor((f) => f.type === 'done' && f.content === 'resumed by the sweep', 30_000);
    expect(await callsOf(sessionId)).toEqual([expect.objectContaining({ name: 'write_file', status: 'done' })]);
    ws.close();
  });
});
