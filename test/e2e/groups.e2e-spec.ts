import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, type Frame, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { until } from '../support/until';

jest.setTimeout(300_000);

interface GroupDto {
  id: string;
  name: string;
  members: Array<{ user_id: string; source: string }>;
}

/**
 * Groups through the real stack: an admin moves a user into and out of a group and the user's
 * next turn follows — the LLM clients the group allows (AUTO passes over the others; a pinned one
 * it does not allow is refused with an `error` naming it and the group, never replaced), the agents
 * it allows, and the rules of its security group at the gate.
 */
describe('groups: agents, LLM clients and security groups follow the owner groups at each turn', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  const m = randomUUID().slice(0, 8);
  const NOTE = `groups e2e ${m}`;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      llmClients: (simUrl) => [
        { name: 'big', baseUrl: simUrl, model: 'sim-big', strength: 'high', priority: 1 },
        { name: 'small', baseUrl: simUrl, model: 'sim-small', strength: 'medium', priority: 2 },
      ],
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    if (db) {
      await db.query(`DELETE FROM approval_rules WHERE note = $1`, [NOTE]);
      await db.query(`DELETE FROM groups WHERE name LIKE $1`, [`%-${m}`]);
      await assertInvariantsAndClose(db);
    }
    await stack?.stop();
  });

  async function connect(user: ApiClient): Promise<{ ws: WsTestClient; sessionId: string }> {
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: user.token, source: 'web' });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    await ws.waitForType('turn_running');
    return { ws, sessionId };
  }

  /** Sends a message and answers the frames of its turn up to its `done` or `error`. */
  async function turn(ws: WsTestClient, content: string): Promise<Frame[]> {
    const from = ws.frames.length;
    ws.send({ type: 'message', client_message_id: `c-${randomUUID()}`, content });
    await ws.waitFor((f) => f.type === 'done' || f.type === 'error', 90_000, from);
    return ws.frames.slice(from);
  }

  const clientsOf = async (sessionId: string): Promise<string[]> =>
    (
      await db.query<Array<{ client: string }>>(
        `SELECT client FROM llm_usage WHERE session_id = $1 AND purpose = 'round' ORDER BY created_at, id`,
        [sessionId],
      )
    ).map((r) => r.client);

  it('a user moved into and out of a group sees the change on the next turn', async () => {
    const alice = await admin.createUser(`groups-${m}@skald.test`, 'correct horse battery');
    const created = await admin.post<GroupDto>('/api/admin/groups', {
      name: `Interns-${m}`,
      allowed_agents: ['main'],
      allowed_llm_clients: ['small'],
      security_groups: [`sg-${m}`],
    });
    expect(created.status).toBe(201);
    const group = created.body;
    // the group's rule: echo runs without asking in the sessions of the group's members
    const rule = await admin.post('/api/approval/rules', {
      tool_pattern: 'execute_cmd',
      command_pattern: 'echo *',
      security_group: `sg-${m}`,
      action: 'allow',
      priority: 1,
      note: NOTE,
    });
    expect(rule.status).toBe(201);
    await sim.script({
      match: `[plain-${m}]`,
      matchIn: 'last_user',
      replies: [{ content: 'plain answer' }],
      repeatLast: true,
    });
    await sim.script({
      match: `[echo-${m}]`,
      matchIn: 'last_user',
      replies: [
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: `echo grouped-${m}` } }] },
        { content: 'echoed' },
      ],
    });

    const { ws, sessionId } = await connect(alice);
    // in no group: everything allowed, AUTO picks the first client
    const first = await turn(ws, `hello [plain-${m}]`);
    expect(first.map((f) => f.type)).toContain('done');
    expect(await clientsOf(sessionId)).toEqual(['big']);

    // moved into the group: AUTO passes over "big"; the group's rule lets echo run
    const added = await admin.post<GroupDto>(`/api/admin/groups/${group.id}/members`, { add: [alice.user!.id] });
    expect(added.status).toBe(200);
    const second = await turn(ws, `run it [echo-${m}]`);
    const said = (fs: Frame[]) => fs.map((f) => (f.type === 'error' ? `error: ${String(f.message)}` : f.type));
    expect(said(second)).toContain('tool_done');
    const toolDone = second.find((f) => f.type === 'tool_done');
    expect(toolDone?.result).toContain(`grouped-${m}`);
    expect(second.some((f) => f.type === 'approval_required')).toBe(false);
    expect(second.map((f) => f.type)).toContain('done');
    expect((await clientsOf(sessionId)).slice(1)).toEqual(['small', 'small']);

    // a pin to a client the group does not allow is refused when it is made, naming it and the group
    const refusal = `The LLM client "big" is not allowed for your groups ("Interns-${m}"); allowed LLM clients: "small".`;
    const pinning = async (): Promise<string> => {
      const pin = ws.frames.length;
      ws.send({ type: 'message', client_message_id: `c-${randomUUID()}`, content: '/model big' });
      return String((await ws.waitFor((f) => f.type === 'command_result', 30_000, pin)).content);
    };
    expect(await pinning()).toBe(refusal);
    // a pin made while allowed (out of the group) is refused at the turn once moved back in, never replaced
    await admin.post(`/api/admin/groups/${group.id}/members`, { remove: [alice.user!.id] });
    expect(await pinning()).toBe('Pinned big for web. /model auto clears it.');
    await admin.post(`/api/admin/groups/${group.id}/members`, { add: [alice.user!.id] });
    const refused = await turn(ws, `again [plain-${m}]`);
    const error = refused.find((f) => f.type === 'error');
    expect(error).toMatchObject({ code: 'forbidden' });
    expect(error?.message).toBe(refusal);
    expect(refused.some((f) => f.type === 'done')).toBe(false);
    expect(await clientsOf(sessionId)).toHaveLength(3);

    // moved out again: the pinned client answers on the next turn
    expect((await admin.post(`/api/admin/groups/${group.id}/members`, { remove: [alice.user!.id] })).status).toBe(200);
    const after = await turn(ws, `and now [plain-${m}]`);
    expect(after.map((f) => f.type)).toContain('done');
    expect((await clientsOf(sessionId)).slice(3)).toEqual(['big']);
    ws.close();
  });

  it('an agent the groups do not allow is refused with a clear error; allowed again, it answers', async () => {
    const bob = await admin.createUser(`groups-bob-${m}@skald.test`, 'correct horse battery');
    const group = (
      await admin.post<GroupDto>('/api/admin/groups', { name: `Main-only-${m}`, allowed_agents: ['main'] })
    ).body;
    await admin.post(`/api/admin/groups/${group.id}/members`, { add: [bob.user!.id] });
    await sim.script({
      match: `[agent-${m}]`,
      matchIn: 'last_user',
      replies: [{ content: 'researched' }],
      repeatLast: true,
    });
    // a new conversation with the researcher is refused at creation, with the sentence a turn would end with
    const refusedAtCreation = await bob.post<{ error: { code: string; message: string; field?: string } }>(
      '/api/sessions?source=web&agent_id=researcher',
    );
    expect(refusedAtCreation.status).toBe(403);
    expect(refusedAtCreation.body.error).toEqual({
      code: 'forbidden',
      field: 'agent_id',
      message: `The agent "researcher" is not allowed for your groups ("Main-only-${m}"); allowed agents: "main".`,
    });
    // made while allowed (out of the group), then moved in: the turn is refused
    await admin.post(`/api/admin/groups/${group.id}/members`, { remove: [bob.user!.id] });
    const made = await bob.post<{ session_id: string }>('/api/sessions?source=web&agent_id=researcher');
    expect(made.status).toBe(201);
    await admin.post(`/api/admin/groups/${group.id}/members`, { add: [bob.user!.id] });
    const { ws, sessionId } = await connect(bob);
    expect(sessionId).toBe(made.body.session_id);
    const refused = await turn(ws, `look it up [agent-${m}]`);
    const error = refused.find((f) => f.type === 'error');
    expect(error?.message).toBe(
      `The agent "researcher" is not allowed for your groups ("Main-only-${m}"); allowed agents: "main".`,
    );
    expect(
      (await admin.request('PATCH', `/api/admin/groups/${group.id}`, { allowed_agents: ['main', 'researcher'] }))
        .status,
    ).toBe(200);
    const allowed = await turn(ws, `look it up again [agent-${m}]`);
    expect(allowed.map((f) => f.type)).toContain('done');
    ws.close();
  });

  it('lists, pins and /context follow the groups; a disallowed pin is refused, never stored', async () => {
    const dan = await admin.createUser(`groups-dan-${m}@skald.test`, 'correct horse battery');
    const group = (
      await admin.post<GroupDto>('/api/admin/groups', {
        name: `Small-${m}`,
        allowed_agents: ['main', 'researcher'],
        allowed_llm_clients: ['small'],
      })
    ).body;
    const clientsNamed = async () =>
      (await dan.get<{ items: Array<{ name: string; number: number }> }>('/api/llm/clients?source=web')).body.items;
    const agentsNamed = async () =>
      (await dan.get<{ items: Array<{ id: string }> }>('/api/agents')).body.items.map((a) => a.id).sort();
    // in no group: every client and agent
    expect((await clientsNamed()).map((c) => c.name)).toEqual(['big', 'small']);
    const everyAgent = await agentsNamed();
    expect(everyAgent.length).toBeGreaterThan(1);
    expect(everyAgent).toContain('researcher');

    await admin.post(`/api/admin/groups/${group.id}/members`, { add: [dan.user!.id] });
    // only what the group allows, each client keeping its configured number
    expect(await clientsNamed()).toMatchObject([{ name: 'small', number: 2 }]);
    expect(await agentsNamed()).toEqual(['researcher']);
    // the admin's own lists (in no group) are not narrowed by dan's groups
    expect((await admin.get<{ items: unknown[] }>('/api/llm/clients')).body.items).toHaveLength(2);

    const { ws } = await connect(dan);
    const command = async (content: string): Promise<string> => {
      const from = ws.frames.length;
      ws.send({ type: 'message', client_message_id: `c-${randomUUID()}`, content });
      const r = await ws.waitFor((f) => f.type === 'command_result', 30_000, from);
      return String(r.content);
    };
    const models = await command('/models');
    expect(models).toContain('2. small');
    expect(models).not.toContain('big');
    const refusal = `The LLM client "big" is not allowed for your groups ("Small-${m}"); allowed LLM clients: "small".`;
    expect(await command('/model big')).toBe(refusal);
    expect(await command('/model 1')).toBe(refusal);
    // select_client: an error frame naming the client, and nothing pinned
    const from = ws.frames.length;
    ws.send({ type: 'select_client', client: 'big' });
    const error = await ws.waitFor((f) => f.type === 'error', 30_000, from);
    expect(error).toMatchObject({ code: 'forbidden', message: refusal });
    expect(ws.frames.slice(from).some((f) => f.type === 'client_selected')).toBe(false);
    expect((await dan.get<{ pinned: string | null }>('/api/llm/clients?source=web')).body.pinned).toBeNull();
    expect(await command('/model small')).toBe('Pinned small for web. /model auto clears it.');
    // /context builds the ports under the same policy (the agent is allowed: a report, not a refusal)
    expect(await command('/context')).toMatch(/^Context of this conversation \(agent main\)/);
    ws.close();
  });

  it("the rules tester evaluates as the gate does for a user's groups; only admins test as someone", async () => {
    const erin = await admin.createUser(`groups-erin-${m}@skald.test`, 'correct horse battery');
    const group = (
      await admin.post<GroupDto>('/api/admin/groups', { name: `Testers-${m}`, security_groups: [`tester-${m}`] })
    ).body;
    await admin.post(`/api/admin/groups/${group.id}/members`, { add: [erin.user!.id] });
    const rule = await admin.post<{ id: string; name: string }>('/api/approval/rules', {
      tool_pattern: 'execute_cmd',
      command_pattern: `printf tester-${m}`,
      security_group: `tester-${m}`,
      action: 'allow',
      priority: 1,
      note: NOTE,
    });
    expect(rule.status).toBe(201);
    const call = { tool_name: 'execute_cmd', arguments: { command: `printf tester-${m}` } };
    type Verdict = { decision: string; rule_id?: string; error?: { code: string; field?: string } };
    // as nobody in particular: the default rules ask
    expect((await admin.post<Verdict>('/api/approval/rules/test', call)).body.decision).toBe('require');
    // as erin (her group's security group) and as a member of the group: the group's rule allows
    for (const as of [{ as_user_id: erin.user!.id }, { as_group_id: group.id }]) {
      const r = await admin.post<Verdict>('/api/approval/rules/test', { ...call, ...as });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ decision: 'allow', rule_id: rule.body.id });
    }
    // unknown ids are 404 naming the field
    const unknown = randomUUID();
    const u404 = await admin.post<Verdict>('/api/approval/rules/test', { ...call, as_user_id: unknown });
    expect([u404.status, u404.body.error?.field]).toEqual([404, 'as_user_id']);
    const g404 = await admin.post<Verdict>('/api/approval/rules/test', { ...call, as_group_id: unknown });
    expect([g404.status, g404.body.error?.field]).toEqual([404, 'as_group_id']);
    // a user may not test as anyone (themselves included: they test their own sessions)
    const other = await erin.post<Verdict>('/api/approval/rules/test', { ...call, as_user_id: admin.user!.id });
    expect([other.status, other.body.error?.field]).toEqual([403, 'as_user_id']);
    const asGroup = await erin.post<Verdict>('/api/approval/rules/test', { ...call, as_group_id: group.id });
    expect([asGroup.status, asGroup.body.error?.field]).toEqual([403, 'as_group_id']);
    // her own session is tested with her groups' security groups, as the gate judges its calls
    const { ws, sessionId } = await connect(erin);
    const own = await erin.post<Verdict>('/api/approval/rules/test', { ...call, session_id: sessionId });
    expect(own.body).toMatchObject({ decision: 'allow', rule_id: rule.body.id });
    ws.close();
  });

  it('Admin → Usage sums tokens and cost per group; only admins see it', async () => {
    const fay = await admin.createUser(`groups-fay-${m}@skald.test`, 'correct horse battery');
    const group = (await admin.post<GroupDto>('/api/admin/groups', { name: `Usage-${m}` })).body;
    await admin.post(`/api/admin/groups/${group.id}/members`, { add: [fay.user!.id] });
    await sim.script({ match: `[usage-${m}]`, matchIn: 'last_user', replies: [{ content: 'counted' }] });
    const { ws } = await connect(fay);
    expect((await turn(ws, `count me [usage-${m}]`)).map((f) => f.type)).toContain('done');
    ws.close();
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const range = `from=${today}&until=${tomorrow}`;
    const mine = await db.query<Array<{ tokens: string }>>(
      `SELECT (SUM(input_tokens) + SUM(output_tokens))::text AS tokens FROM llm_usage WHERE user_id = $1`,
      [fay.user!.id],
    );
    const r = await admin.get<{
      groups: Array<{ group_id: string | null; users: number; input_tokens: number; output_tokens: number }>;
    }>(`/api/admin/usage?${range}`);
    expect(r.status).toBe(200);
    const row = r.body.groups.find((g) => g.group_id === group.id);
    expect(row).toMatchObject({ users: 1 });
    expect(String(row!.input_tokens + row!.output_tokens)).toBe(mine[0].tokens);
    const csv = await admin.request('GET', `/api/admin/usage/export?${range}&by=group`);
    expect(csv.status).toBe(200);
    expect(String(csv.body)).toContain(`${group.id},Usage-${m},1,`);
    // a user sees no group's usage: the admin routes are 403, their own report names no group
    expect((await fay.get(`/api/admin/usage?${range}`)).status).toBe(403);
    expect((await fay.request('GET', `/api/admin/usage/export?${range}&by=group`)).status).toBe(403);
    const own = await fay.get<{ groups: unknown[] }>(`/api/llm/usage?${range}`);
    expect(own.body.groups).toEqual([]);
  });

  it("a cron job runs with its owner's groups at fire time", async () => {
    const carol = await admin.createUser(`groups-carol-${m}@skald.test`, 'correct horse battery');
    const group = (
      await admin.post<GroupDto>('/api/admin/groups', { name: `Nightly-${m}`, security_groups: [`cron-${m}`] })
    ).body;
    const rule = await admin.post('/api/approval/rules', {
      tool_pattern: 'execute_cmd',
      command_pattern: 'echo *',
      security_group: `cron-${m}`,
      action: 'allow',
      priority: 1,
      note: NOTE,
    });
    expect(rule.status).toBe(201);
    const call = { tool_calls: [{ name: 'execute_cmd', arguments: { command: `echo cron-${m}` } }] };
    await sim.script({
      match: `[cron-${m}]`,
      matchIn: 'last_user',
      replies: [call, { content: 'first run' }, call, { content: 'second run' }],
    });
    const job = await carol.post<{ id: string }>('/api/cron/jobs', {
      title: 'nightly echo',
      prompt: `Echo it [cron-${m}]`,
      cron: '0 0 1 1 *',
      enabled: false,
    });
    expect(job.status).toBe(201);
    const fire = async (n: number): Promise<string | null | undefined> => {
      expect((await carol.post(`/api/cron/jobs/${job.body.id}/run`)).status).toBe(202);
      const run = await until('the run to end', async () => {
        const r = await carol.get<{ items: Array<{ status: string; session_id: string }> }>(
          `/api/cron/runs?job_id=${job.body.id}`,
        );
        const done = r.body.items.filter((x) => x.status !== 'running');
        return done.length >= n ? r.body.items[0] : null;
      });
      const tree = (
        await carol.get<{ messages: Array<{ kind: string; name?: string; status?: string }> }>(
          `/api/sessions/${run.session_id}`,
        )
      ).body;
      return tree.messages.find((x) => x.kind === 'tool' && x.name === 'execute_cmd')?.status;
    };
    // in no group: a cron session cannot ask, so the command is rejected
    expect(await fire(1)).toBe('rejected');
    // moved into the group after the job was made: the next fire runs under its security group
    await admin.post(`/api/admin/groups/${group.id}/members`, { add: [carol.user!.id] });
    expect(await fire(2)).toBe('done');
  });
});
