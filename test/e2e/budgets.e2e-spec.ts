import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, type Frame, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(300_000);

/** Tokens of every call llm-sim answers here (990 in, 10 out). */
const CALL = 1_000;
const RESET =
  /It resets at 00:00 UTC on \d{4}-\d\d-\d\d \(in [^)]+\); until then the agent cannot call a model for you\.$/;

/**
 * Budgets through the real stack with two session-worker processes: concurrent turns of one user
 * with a small daily token limit (an admin's for them) spend it up to one call past it, and the turn
 * that would pass it ends with `error` `exhausted` naming the limit and its reset; a user moved into
 * a group with a limit is held to it from their next turn; the user and the admin see the use.
 */
describe('budgets: limits shared by two workers, named in the refusal', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  const m = randomUUID().slice(0, 8);

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      replicas: { 'session-worker': 2 },
      // No titles: every model call here is a turn's round.
      perApp: { 'session-worker': { SKALD_TITLES: 'off' } },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    if (db) {
      await db.query(`DELETE FROM groups WHERE name LIKE $1`, [`%-${m}`]);
      await assertInvariantsAndClose(db);
    }
    await stack?.stop();
  });

  async function connect(user: ApiClient, source: string): Promise<WsTestClient> {
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: user.token, source });
    await ws.waitForType('hello');
    await ws.waitForType('turn_running');
    return ws;
  }

  /** Sends a message and answers the session events of its turn up to its `done` or `error`. */
  async function turn(ws: WsTestClient, content: string): Promise<Frame[]> {
    const from = ws.frames.length;
    ws.send({ type: 'message', client_message_id: `c-${randomUUID()}`, content });
    await ws.waitFor((f) => (f.type === 'done' || f.type === 'error') && typeof f.seq === 'number', 120_000, from);
    return ws.frames.slice(from);
  }

  const ledger = async (userId: string): Promise<number> =>
    Number(
      (
        await db.query<{ t: string }[]>(
          `SELECT COALESCE(SUM(input_tokens + output_tokens), 0) AS t FROM llm_usage WHERE user_id = $1`,
          [userId],
        )
      )[0].t,
    );

  it("concurrent turns on two workers pass a user's limit by at most one call; the refusal names it", async () => {
    const alice = await admin.createUser(`budget-${m}@skald.test`, 'correct horse battery');
    const aliceId = alice.user!.id;
    const LIMIT = 5_500;
    const put = await admin.request('PUT', `/api/admin/users/${aliceId}/budget`, { tokens_per_day: LIMIT });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      user_limits: { tokens_per_day: LIMIT, tokens_per_month: null },
      limits: [{ dimension: 'tokens_per_day', limit: LIMIT, used: 0, set_by: 'user' }],
    });
    const marker = `[BUDGET-${m}]`;
    await sim.script({
      match: marker,
      replies: [{ content: 'ok', usage: { prompt_tokens: 990, completion_tokens: 10 }, latency: { firstByteMs: 300 } }],
      repeatLast: true,
    });
    const sockets = await Promise.all(Array.from({ length: 10 }, (_, i) => connect(alice, `b${i}`)));
    const turns = await Promise.all(sockets.map((ws, i) => turn(ws, `question ${i} ${marker}`)));
    const used = await ledger(aliceId);
    const done = turns.filter((t) => t.some((f) => f.type === 'done')).length;
    const errors = turns.flatMap((t) => t.filter((f) => f.type === 'error'));
    const workers = stack.byName('session-worker').filter((p) => p.logs.some((l) => l.includes(aliceId))).length;
    console.log(
      `budget e2e: ${done} turns done, ${errors.length} refused, ledger ${used} tokens for a limit of ${LIMIT} ` +
        `(overrun ${used - LIMIT}, one call ${CALL}), turns on ${workers} worker processes`,
    );
    expect(workers).toBe(2);
    expect(used).toBeLessThanOrEqual(LIMIT + CALL);
    expect(used).toBeGreaterThanOrEqual(LIMIT);
    expect(done).toBe(used / CALL);
    expect(errors.length).toBe(10 - done);
    for (const e of errors) {
      expect(e).toMatchObject({ code: 'exhausted' });
      expect(String(e.message)).toMatch(
        /^Your daily token limit of 5,500 is (used up: \d+,\d{3} tokens used today \(UTC\)\. |nearly used up)/,
      );
    }
    const refused = errors.find((e) => String(e.message).includes('is used up'));
    expect(String(refused?.message)).toMatch(RESET);
    // Once spent, a turn is refused before any model call.
    const before = (await sim.requests({ contains: marker })).length;
    const again = await turn(sockets[0], `again ${marker}`);
    expect(again.find((f) => f.type === 'error')).toMatchObject({ code: 'exhausted' });
    expect(String(again.find((f) => f.type === 'error')?.message)).toMatch(RESET);
    expect(await sim.requests({ contains: marker })).toHaveLength(before);
    // The user's own view, /cost, and the admin's list of users near a limit.
    const mine = await alice.get<{ limits: Array<{ used: number; percent: number; resets_at: string }> }>(
      '/api/llm/budget',
    );
    expect(mine.body.limits[0]).toMatchObject({ used, percent: Math.floor((used / LIMIT) * 100) });
    expect(mine.body.limits[0].resets_at).toMatch(/T00:00:00\.000Z$/);
    const near = await admin.get<{ items: Array<{ user_id: string; email: string }> }>('/api/admin/budgets');
    expect(near.body.items.find((i) => i.user_id === aliceId)).toMatchObject({ email: `budget-${m}@skald.test` });
    for (const ws of sockets) ws.close();
    // Cleared: the user has no limit again.
    expect((await admin.request('DELETE', `/api/admin/users/${aliceId}/budget`)).status).toBe(204);
    const ws = await connect(alice, 'b0');
    expect((await turn(ws, `free again ${marker}`)).some((f) => f.type === 'done')).toBe(true);
    ws.close();
  });

  it('a user moved into a group with a limit is held to it from their next turn, named by the group', async () => {
    const bob = await admin.createUser(`budget-bob-${m}@skald.test`, 'correct horse battery');
    const bobId = bob.user!.id;
    const marker = `[GROUP-${m}]`;
    await sim.script({
      match: marker,
      replies: [{ content: 'ok', usage: { prompt_tokens: 990, completion_tokens: 10 } }],
      repeatLast: true,
    });
    const ws = await connect(bob, 'web');
    expect((await turn(ws, `first ${marker}`)).some((f) => f.type === 'done')).toBe(true);
    const group = await admin.post<{ id: string; budget: Record<string, number | null> }>('/api/admin/groups', {
      name: `Interns-${m}`,
      budget: { tokens_per_day: CALL },
    });
    expect(group.status).toBe(201);
    expect(group.body.budget).toEqual({
      tokens_per_day: CALL,
      tokens_per_month: null,
      cost_usd_per_day: null,
      cost_usd_per_month: null,
    });
    expect((await admin.post(`/api/admin/groups/${group.body.id}/members`, { add: [bobId] })).status).toBe(200);
    const second = await turn(ws, `second ${marker}`);
    const error = second.find((f) => f.type === 'error');
    expect(error).toMatchObject({ code: 'exhausted' });
    expect(String(error?.message)).toMatch(
      new RegExp(
        `^Your group "Interns-${m}" daily token limit of 1,000 is used up: 1,000 tokens used today \\(UTC\\)\\. `,
      ),
    );
    expect(String(error?.message)).toMatch(RESET);
    const cost = await (async () => {
      const from = ws.frames.length;
      ws.send({ type: 'message', client_message_id: `c-${randomUUID()}`, content: '/cost' });
      return String((await ws.waitFor((f) => f.type === 'command_result', 30_000, from)).content);
    })();
    expect(cost).toContain(`Today (UTC): 1,000 tokens of your group "Interns-${m}" daily token limit of 1,000 used`);
    // The group's limit lifted: the next turn runs.
    await admin.request('PATCH', `/api/admin/groups/${group.body.id}`, { budget: { tokens_per_day: 10 * CALL } });
    expect((await turn(ws, `third ${marker}`)).some((f) => f.type === 'done')).toBe(true);
    ws.close();
  });
});
