import { existsSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { until } from '../support/until';

jest.setTimeout(120_000);

interface Tree {
  messages: Array<{ kind: string; name?: string; status?: string; arguments?: unknown; result?: string | null }>;
}

/**
 * The gate sees what production sessions are: a cron job's session carries its RunContext and
 * security group to every `approval.check`, so the fast path and the group's rules apply there
 * (a cron session cannot ask a human: whatever would ask is rejected).
 */
describe('gate scope: RunContext and security group reach the gate for a cron session', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  const NOTE = `gate-scope e2e ${randomUUID()}`;

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
  });
  afterAll(async () => {
    if (db) {
      await db.query(`DELETE FROM approval_rules WHERE note = $1`, [NOTE]);
      await db.query(`UPDATE scheduled_jobs SET enabled = false`);
      await assertInvariantsAndClose(db);
    }
    await stack?.stop();
  });

  it('a cron job: pre-authorised writes and its group rule run, everything else is rejected', async () => {
    // a security group is an admin's choice: the job's owner is an admin
    const api = await admin.createUser(`g-${randomUUID()}@skald.test`, 'correct horse battery', 'admin');
    const m = randomUUID().slice(0, 8);
    const group = `nightly-${m}`;
    // the group's rule: echo may run in this group's sessions (and nowhere else)
    const rule = await admin.post<{ id: string }>('/api/approval/rules', {
      tool_pattern: 'execute_cmd',
      command_pattern: 'echo *',
      security_group: group,
      action: 'allow',
      priority: 1,
      note: NOTE,
    });
    expect(rule.status).toBe(201);
    await sim.script({
      match: `[G-${m}]`,
      replies: [
        {
          tool_calls: [
            // relative to the job's working directory: /workspace/reports/r.txt, inside allow_fs_writes
            { name: 'write_file', arguments: { path: 'r.txt', content: `report ${m}\n` } },
            { name: 'execute_cmd', arguments: { command: `echo grouped-${m}` } },
            // a write outside the pre-authorised path: would ask, so it is rejected
            { name: 'write_file', arguments: { path: '../elsewhere.txt', content: 'no' } },
            // a model-supplied workdir does not move the write away from where the gate judged it
            { name: 'write_file', arguments: { path: 'moved.txt', content: 'here', workdir: '/workspace/other' } },
          ],
        },
        { content: `done [N-${m}]` },
      ],
    });
    await sim.script({ match: `[N-${m}]`, replies: Array.from({ length: 3 }, () => ({ content: 'noted' })) });
    const job = await api.post<{ id: string }>('/api/cron/jobs', {
      title: 'nightly report',
      prompt: `Write the report [G-${m}]`,
      cron: '0 0 1 1 *',
      enabled: false,
      run_context: {
        working_directory: '/workspace/reports',
        allow_fs_writes: ['/workspace/reports'],
        security_group: group,
      },
    });
    expect(job.status).toBe(201);
    expect((await api.post(`/api/cron/jobs/${job.body.id}/run`)).status).toBe(202);
    const run = await until('the run to end', async () => {
      const r = await api.get<{ items: Array<{ status: string; session_id: string }> }>(
        `/api/cron/runs?job_id=${job.body.id}`,
      );
      const it = r.body.items[0];
      return it && it.status !== 'running' ? it : null;
    });
    expect(run.status).toBe('succeeded');
    const tree = (await api.get<Tree>(`/api/sessions/${run.session_id}`)).body;
    const tools = tree.messages.filter((x) => x.kind === 'tool').map((x) => [x.name, x.status]);
    expect(tools).toEqual([
      ['write_file', 'done'],
      ['execute_cmd', 'done'],
      ['write_file', 'rejected'],
      ['write_file', 'done'],
    ]);
    const echo = tree.messages.find((x) => x.kind === 'tool' && x.name === 'execute_cmd');
    expect(echo?.result).toContain(`grouped-${m}`);
    const home = path.join(stack.env.SKALD_WORKSPACES, api.user!.id);
    expect(existsSync(path.join(home, 'reports', 'r.txt'))).toBe(true);
    expect(existsSync(path.join(home, 'elsewhere.txt'))).toBe(false);
    expect(existsSync(path.join(home, 'reports', 'moved.txt'))).toBe(true);
    expect(existsSync(path.join(home, 'other', 'moved.txt'))).toBe(false);
    // the audit says why each ran: the RunContext fast path, then the group's rule
    const allowed = await until('the audit to be written', async () => {
      const audit = await api.get<{
        items: Array<{ tool_name: string; decision: string; by: string; rule_id?: string }>;
      }>(`/api/approval/audit?session_id=${run.session_id}`);
      const a = audit.body.items.filter((x) => x.decision === 'allow');
      return a.length >= 3 ? a : null;
    });
    expect(allowed).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ tool_name: 'write_file', by: 'run_context' }),
        expect.objectContaining({ tool_name: 'execute_cmd', by: 'rule', rule_id: rule.body.id }),
      ]),
    );
  });
  it('the rule tester answers for a named session as the gate does for a call of it: agent, source, group, RunContext', async () => {
    const api = await admin.createUser(`t-${randomUUID()}@skald.test`, 'correct horse battery', 'admin');
    const m = randomUUID().slice(0, 8);
    const group = `tester-${m}`;
    const rule = async (scope: Record<string, string>, action: string) => {
      const r = await admin.post<{ id: string }>('/api/approval/rules', {
        tool_pattern: 'execute_cmd',
        command_pattern: `echo tester-${m}*`,
        action,
        priority: 1,
        note: NOTE,
        ...scope,
      });
      expect(r.status).toBe(201);
      return r.body.id;
    };
    const byAgent = await rule({ agent_id: 'researcher' }, 'deny');
    const bySource = await rule({ source: 'mobile' }, 'allow');
    const byGroup = await rule({ security_group: group }, 'allow');
    const session = async (source: string) =>
      (await api.post<{ session_id: string }>(`/api/sessions?source=${source}`)).body.session_id;
    const plain = await session('web');
    const researcher = await session('web');
    // a session of another agent (what a cron job of that agent starts)
    await db.query(`UPDATE sessions SET agent_id = 'researcher' WHERE id = $1`, [researcher]);
    const mobile = await session('mobile');
    const grouped = await session('web');
    const rc = await api.request('PUT', `/api/sessions/${grouped}/run-context`, {
      security_group: group,
      working_directory: '/workspace/out',
      allow_fs_writes: ['/workspace/out'],
    });
    expect(rc.status).toBe(200);
    type Answer = { decision: string; by: string; rule_id?: string };
    const test = async (sessionId: string, tool: string, args: Record<string, unknown>) =>
      (await api.post<Answer>('/api/approval/rules/test', { tool_name: tool, arguments: args, session_id: sessionId }))
        .body;
    const echo = { command: `echo tester-${m}` };
    // the rules reach the tester within the rule set's refresh
    await until('the new rules', async () => (await test(researcher, 'execute_cmd', echo)).decision === 'deny', 10_000);
    expect(await test(plain, 'execute_cmd', echo)).toMatchObject({ decision: 'require' });
    expect(await test(researcher, 'execute_cmd', echo)).toMatchObject({ decision: 'deny', rule_id: byAgent });
    expect(await test(mobile, 'execute_cmd', echo)).toMatchObject({ decision: 'allow', rule_id: bySource });
    expect(await test(grouped, 'execute_cmd', echo)).toMatchObject({ decision: 'allow', rule_id: byGroup });
    // the RunContext: a relative path lands in the working directory, inside the pre-authorised path
    expect(await test(grouped, 'write_file', { path: 'r.txt', content: 'x' })).toMatchObject({
      decision: 'allow',
      by: 'run_context',
    });
    expect(await test(plain, 'write_file', { path: 'r.txt', content: 'x' })).toMatchObject({ decision: 'require' });
    // naming another agent than the session's is refused, not silently answered for the session
    const other = await api.post<{ error: { code: string; field?: string } }>('/api/approval/rules/test', {
      tool_name: 'execute_cmd',
      arguments: echo,
      session_id: researcher,
      agent_id: 'main',
    });
    expect(other).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', field: 'agent_id' } } });
    // without a session an admin still asks about any agent, source and group
    const free = await api.post<Answer>('/api/approval/rules/test', {
      tool_name: 'execute_cmd',
      arguments: echo,
      agent_id: 'researcher',
    });
    expect(free.body).toMatchObject({ decision: 'deny', rule_id: byAgent });
  });
});
