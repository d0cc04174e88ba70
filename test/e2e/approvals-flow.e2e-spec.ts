import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, Frame, LlmSimAdminClient, Stack, StackProcess, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(180_000);

const LEASE_TTL_MS = 3000;

/** A human in the loop: the card, the answer from any surface, parking, a crash while waiting. */
describe('approvals through the whole stack', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      replicas: { 'session-worker': 2, gateway: 2 },
      env: { SKALD_LEASE_TTL_MS: String(LEASE_TTL_MS), SKALD_SWEEP_INTERVAL_MS: '1000', SKALD_HUMAN_POLL_MS: '500' },
      perApp: { 'session-worker': { SKALD_PARK_AFTER: '2' } },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  async function open(): Promise<{ api: ApiClient; ws: WsTestClient; sessionId: string }> {
    const api = await admin.createUser(`h-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    return { api, ws, sessionId };
  }

  const fileOf = (api: ApiClient, name: string): string =>
    readFileSync(path.join(stack.env.SKALD_WORKSPACES, api.user!.id, name), 'utf8');

  it('a file write asks with its exact diff; approving writes exactly the preview, rejecting tells the model the note', async () => {
    const { api, ws } = await open();
    const m = `w-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'write_file', arguments: { path: 'plan.md', content: '# Plan\nship it\n' } }] },
        { tool_calls: [{ name: 'write_file', arguments: { path: 'plan.md', content: 'overwrite everything' } }] },
        { content: 'understood' },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `write the plan ${m}` });
    const card = await ws.waitForType('pending_write');
    expect(card).toMatchObject({ path: '/workspace/plan.md', new_content: '# Plan\nship it\n' });
    expect(card.old_content ?? '').toBe('');
    const requested = await ws.waitForType('approval_requested');
    expect(requested.request_id).toBe(card.request_id);
    ws.send({ type: 'approve_tool', request_id: card.request_id });
    await ws.waitForType('tool_done');
    expect(fileOf(api, 'plan.md')).toBe(card.new_content);

    const second = await ws.waitFor((f) => f.type === 'pending_write' && f.request_id !== card.request_id);
    expect(second.old_content).toBe('# Plan\nship it\n');
    ws.send({ type: 'reject_tool', request_id: second.request_id, note: 'keep my plan' });
    const rejected = await ws.waitForType('tool_rejected');
    expect(rejected.reason).toBe('User rejected this tool call. Reason: keep my plan');
    await ws.waitFor((f) => f.type === 'done' && f.content === 'understood');
    expect(fileOf(api, 'plan.md')).toBe('# Plan\nship it\n');
    const third = (await sim.requests({ contains: m }))[2].body as {
      messages: Array<{ role: string; content: unknown }>;
    };
    expect(JSON.stringify(third.messages.filter((x) => x.role === 'tool').pop()?.content)).toContain(
      'User rejected this tool call. Reason: keep my plan',
    );
    // A second answer to an answered request is a conflict.
    ws.send({ type: 'approve_tool', request_id: second.request_id });
    const conflict = await ws.waitFor((f) => f.type === 'error' && f.request_id === second.request_id);
    expect(conflict.code).toBe('conflict');
    ws.close();
  });

  it('delete_file passes the gate: it asks with a card; approving deletes the file, rejecting leaves it', async () => {
    const { api, ws } = await open();
    const home = path.join(stack.env.SKALD_WORKSPACES, api.user!.id);
    mkdirSync(path.join(home, 'old'), { recursive: true });
    writeFileSync(path.join(home, 'old', 'doomed.txt'), 'bye\n');
    writeFileSync(path.join(home, 'old', 'keep.txt'), 'stay\n');
    const m = `d-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'delete_file', arguments: { path: 'old/doomed.txt' } }] },
        { tool_calls: [{ name: 'delete_file', arguments: { path: 'old/keep.txt' } }] },
        { content: `cleaned ${m}` },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `clean up ${m}` });
    const card = await ws.waitForType('approval_required');
    expect(card).toMatchObject({ tool_name: 'delete_file' });
    expect(JSON.stringify(card)).toContain('old/doomed.txt');
    // asking deleted nothing
    expect(existsSync(path.join(home, 'old', 'doomed.txt'))).toBe(true);
    ws.send({ type: 'approve_tool', request_id: card.request_id });
    await ws.waitFor((f) => f.type === 'tool_done' && f.tool_call_id === card.tool_call_id);
    expect(existsSync(path.join(home, 'old', 'doomed.txt'))).toBe(false);

    const second = await ws.waitFor((f) => f.type === 'approval_required' && f.request_id !== card.request_id);
    expect(second).toMatchObject({ tool_name: 'delete_file' });
    ws.send({ type: 'reject_tool', request_id: second.request_id, note: 'keep it' });
    const rejected = await ws.waitFor((f) => f.type === 'tool_rejected' && f.tool_call_id === second.tool_call_id);
    expect(rejected.reason).toBe('User rejected this tool call. Reason: keep it');
    await ws.waitFor((f) => f.type === 'done' && f.content === `cleaned ${m}`);
    expect(readFileSync(path.join(home, 'old', 'keep.txt'), 'utf8')).toBe('stay\n');
    // as stored: the approved call done, the rejected one rejected
    const calls = await db.query<Array<{ status: string }>>(
      `SELECT status FROM tool_calls WHERE id = ANY($1::uuid[]) ORDER BY array_position($1::uuid[], id)`,
      [[card.tool_call_id, second.tool_call_id]],
    );
    expect(calls.map((c) => c.status)).toEqual(['done', 'rejected']);
    ws.close();
  });

  it('a file edited by hand after the preview is not overwritten: approving re-asks with a fresh diff, the second approval writes it', async () => {
    const { api, ws } = await open();
    const file = path.join(stack.env.SKALD_WORKSPACES, api.user!.id, 'notes.md');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, 'alpha\nbeta\n');
    const m = `s-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'edit_file', arguments: { path: 'notes.md', old: 'beta', new: 'BETA' } }] },
        { content: 'edited' },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `edit the notes ${m}` });
    const card = await ws.waitForType('pending_write');
    expect(card).toMatchObject({
      path: '/workspace/notes.md',
      old_content: 'alpha\nbeta\n',
      new_content: 'alpha\nBETA\n',
    });

    writeFileSync(file, 'alpha\nbeta\ngamma\n'); // the concurrent edit
    ws.send({ type: 'approve_tool', request_id: card.request_id });
    const fresh = await ws.waitFor((f) => f.type === 'pending_write' && f.request_id !== card.request_id);
    expect(fresh).toMatchObject({
      tool_call_id: card.tool_call_id,
      old_content: 'alpha\nbeta\ngamma\n',
      new_content: 'alpha\nBETA\ngamma\n',
    });
    expect(fileOf(api, 'notes.md')).toBe('alpha\nbeta\ngamma\n');

    ws.send({ type: 'approve_tool', request_id: fresh.request_id });
    const done = await ws.waitForType('tool_done');
    expect(done.tool_call_id).toBe(card.tool_call_id);
    await ws.waitFor((f) => f.type === 'done' && f.content === 'edited');
    expect(fileOf(api, 'notes.md')).toBe(fresh.new_content);
    ws.close();
  });

  it('a turn waiting for a human parks (lease released), reports running with waiting, and resumes on an answer by tool call id from another gateway', async () => {
    const { api, ws, sessionId } = await open();
    const m = `p-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'write_file', arguments: { path: 'parked.txt', content: 'later' } }] },
        { content: 'written after parking' },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `park ${m}` });
    const card = await ws.waitForType('pending_write');
    // Parked: the lease is released and the session says parked.
    for (let i = 0; i < 100; i++) {
      const rows: Array<{ turn_state: string; owner: string | null }> = await db.query(
        `SELECT s.turn_state, l.owner FROM sessions s LEFT JOIN session_leases l ON l.session_id = s.id WHERE s.id = $1`,
        [sessionId],
      );
      if (rows[0].turn_state === 'parked' && rows[0].owner === null) break;
      if (i === 99) throw new Error(`never parked: ${JSON.stringify(rows)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const other = await WsTestClient.connect(stack.byName('gateway')[1].url, { token: api.token });
    const running = await other.waitForType('turn_running');
    expect(running).toMatchObject({ running: true, waiting: 'approval' });
    const inbox = await api.get<{ approvals: Array<{ request_id: string; tool_call_id: string }> }>('/api/inbox');
    expect(inbox.body.approvals.map((a) => a.request_id)).toEqual([card.request_id]);

    const viaOther = new ApiClient(stack.byName('gateway')[1].url, api.token);
    const r = await viaOther.post(`/api/tools/${String(card.tool_call_id)}/resolve`, { action: 'approve' });
    expect(r.status).toBe(200);
    await ws.waitFor((f) => f.type === 'done' && f.content === 'written after parking', 20_000);
    expect(fileOf(api, 'parked.txt')).toBe('later');
    ws.close();
    other.close();
  });

  it('kill -9 while waiting for approval: the recovered turn re-asks with the same request id, and the answer completes it', async () => {
    const { api, ws, sessionId } = await open();
    const m = `c-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'write_file', arguments: { path: 'crash.txt', content: 'once' } }] },
        { content: 'done after the crash' },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `crash ${m}` });
    const card = await ws.waitForType('pending_write');
    const driver = stack
      .byName('session-worker')
      .find((w: StackProcess) => w.logs.some((l) => l.includes(sessionId) && l.includes('"turn started"')));
    expect(driver).toBeDefined();
    driver!.child.kill('SIGKILL');
    // The card comes again, same request id.
    const again = await ws.waitFor(
      (f: Frame) => f.type === 'pending_write' && ws.frames.indexOf(f) > ws.frames.indexOf(card),
      LEASE_TTL_MS + 15_000,
    );
    expect(again.request_id).toBe(card.request_id);
    ws.send({ type: 'approve_tool', request_id: card.request_id });
    await ws.waitFor((f) => f.type === 'done' && f.content === 'done after the crash', 20_000);
    expect(fileOf(api, 'crash.txt')).toBe('once');
    const requests: Array<{ n: number }> = await db.query(
      `SELECT count(*)::int AS n FROM approval_requests WHERE session_id = $1`,
      [sessionId],
    );
    expect(requests[0].n).toBe(1);
    await stack.addReplica('session-worker');
    ws.close();
  });

  it('a parked turn: steer waits for the answer, interrupt stops the turn (approval cancelled) and starts its own', async () => {
    const { ws, sessionId } = await open();
    const m = `pi-${randomUUID()}`;
    await sim.script({
      match: m,
      matchIn: 'last_user',
      replies: [{ tool_calls: [{ name: 'write_file', arguments: { path: 'never.txt', content: 'x' } }] }],
    });
    await sim.script({ match: `int-${m}`, matchIn: 'last_user', replies: [{ content: 'the interrupt is answered' }] });
    ws.send({ type: 'message', client_message_id: m, content: `park ${m}` });
    const card = await ws.waitForType('pending_write');
    for (let i = 0; i < 100; i++) {
      const rows: Array<{ turn_state: string }> = await db.query(`SELECT turn_state FROM sessions WHERE id = $1`, [
        sessionId,
      ]);
      if (rows[0].turn_state === 'parked') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    ws.send({ type: 'message', client_message_id: `steer-${m}`, content: `meanwhile ${m}-steer`, delivery: 'steer' });
    await ws.waitFor((f) => f.type === 'ack' && f.client_message_id === `steer-${m}`);
    await new Promise((r) => setTimeout(r, 1500));
    // Still parked, the steer message not entered.
    expect(ws.frames.some((f) => f.type === 'user_message' && String(f.content).includes('-steer'))).toBe(false);
    ws.send({ type: 'message', client_message_id: `int-${m}`, content: `int-${m}`, delivery: 'interrupt' });
    await ws.waitFor((f) => f.type === 'done' && f.content === 'the interrupt is answered', 20_000);
    const call: Array<{ status: string }> = await db.query(`SELECT status FROM tool_calls WHERE session_id = $1`, [
      sessionId,
    ]);
    expect(call).toEqual([{ status: 'cancelled' }]);
    const request: Array<{ status: string }> = await db.query(`SELECT status FROM approval_requests WHERE id = $1`, [
      card.request_id,
    ]);
    expect(request).toEqual([{ status: 'cancelled' }]);
    // The steer message was kept out by the stop: discarded and announced, never entered.
    const discarded = ws.frames.find((f) => f.type === 'message_discarded');
    expect(discarded).toMatchObject({ client_message_id: `steer-${m}` });
    ws.send({ type: 'approve_tool', request_id: card.request_id });
    expect((await ws.waitFor((f) => f.type === 'error' && f.request_id === card.request_id)).code).toBe('conflict');
    ws.close();
  });

  it("shared memory is written only from an admin's session: a user's write is denied, an admin's asks", async () => {
    const m = `sm-${randomUUID()}`;
    const write = {
      tool_calls: [{ name: 'write_file', arguments: { path: 'shared-memory/policy.md', content: 'be kind' } }],
    };
    await sim.script({ match: `u-${m}`, replies: [write, { content: 'ok' }] });
    await sim.script({ match: `a-${m}`, replies: [write, { content: 'ok' }] });
    const { ws } = await open();
    ws.send({ type: 'message', client_message_id: `u-${m}`, content: `share u-${m}` });
    const rejected = await ws.waitForType('tool_rejected');
    expect(String(rejected.reason)).toMatch(/admin/i);
    ws.close();
    const adminWs = await WsTestClient.connect(stack.gatewayUrl, { token: admin.token, source: 'adminchat' });
    await adminWs.waitForType('hello');
    adminWs.send({ type: 'message', client_message_id: `a-${m}`, content: `share a-${m}` });
    const card = await adminWs.waitForType('pending_write');
    expect(card.path).toBe('shared-memory/policy.md');
    adminWs.send({ type: 'approve_tool', request_id: card.request_id });
    await adminWs.waitForType('tool_done');
    adminWs.close();
  });
});
