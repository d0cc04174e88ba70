import { expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, StackProcess, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { until } from '../support/until';

jest.setTimeout(180_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LEASE_TTL_MS = 3000;

interface Tree {
  messages: Array<{ kind: string; name?: string; status?: string; result?: string | null; is_synthetic: boolean }>;
}

/**
 * The scheduler through the gateway: three scheduler replicas, two session workers, llm-sim.
 * Cron jobs over REST, async tasks from `execute_task` mode async, kill, and kill -9 of a
 * scheduler and of the worker running a job.
 */
describe('scheduler: cron jobs and async tasks end to end', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  const SOURCE = 'sched';

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      replicas: { scheduler: 3, 'session-worker': 2 },
      env: {
        SKALD_LEASE_TTL_MS: String(LEASE_TTL_MS),
        SKALD_SWEEP_INTERVAL_MS: '1000',
      },
      perApp: {
        scheduler: {
          SKALD_CRON_MIN_INTERVAL_S: '1',
          SKALD_JOB_POLL_MS: '300',
          SKALD_JOB_STALE_MS: '3000',
          SKALD_JOB_RECONCILE_MS: '2000',
        },
      },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
    await db.query(
      `INSERT INTO approval_rules (id, tool_pattern, source, action, priority, note, name) VALUES ($1, 'execute_task', $2, 'allow', 1, 'scheduler test', 'test rule')`,
      [randomUUID(), SOURCE],
    );
  });

  afterAll(async () => {
    if (db) {
      await db.query(`DELETE FROM approval_rules WHERE note = 'scheduler test'`);
      await db.query(`UPDATE scheduled_jobs SET enabled = false`);
      await assertInvariantsAndClose(db);
    }
    await stack?.stop();
  });

  beforeEach(async () => {
    for (const name of ['scheduler', 'session-worker'] as const) {
      const want = name === 'scheduler' ? 3 : 2;
      const live = stack.byName(name).filter((p) => p.child.exitCode === null && p.child.signalCode === null);
      for (let i = live.length; i < want; i++) await stack.addReplica(name);
    }
  });

  const user = () => admin.createUser(`s-${randomUUID()}@skald.test`, 'correct horse battery');
  const runsOf = (jobId: string) =>
    db.query<
      Array<{ id: string; due_at: Date; status: string; session_id: string; runner: string; delivered_at: Date | null }>
    >(`SELECT id, due_at, status, session_id, runner, delivered_at FROM job_runs WHERE job_id = $1 ORDER BY due_at`, [
      jobId,
    ]);

  it('execute_task mode async: a receipt at once, then the result arrives in the parent as a completed task_completed call and the parent answers', async () => {
    const api = await user();
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: SOURCE });
    const parent = (await ws.waitForType('hello')).session_id as string;
    const m = randomUUID();
    await sim.script({
      match: `[P-${m}]`,
      replies: [
        {
          content: 'Starting it.',
          tool_calls: [
            {
              name: 'execute_task',
              arguments: {
                agent_id: 'generalist',
                prompt: `Find the answer [C-${m}]`,
                title: 'Find the answer',
                mode: 'async',
              },
            },
          ],
        },
        { content: 'Started it in the background.' },
        { content: 'The background task says 42.' },
      ],
    });
    await sim.script({
      match: `[C-${m}]`,
      replies: [{ content: 'The answer is 42.', latency: { firstByteMs: 2500 } }],
    });
    ws.send({ type: 'message', client_message_id: `c-${m}`, content: `Research this [P-${m}]` });
    const first = await ws.waitForType('done', 60_000);
    expect(first.content).toBe('Started it in the background.');
    const receipt = ws.frames.find((f) => f.type === 'tool_done');
    expect(receipt?.result).toMatch(/^Task started in the background as job [0-9a-f-]{36}/);
    const running = await ws.waitFor((f) => f.type === 'task_update' && f.state === 'running', 30_000);
    expect(running).toMatchObject({ title: 'Find the answer', agent_id: 'generalist' });
    const tasks = await api.get<{ items: Array<{ state: string; title: string }> }>(`/api/${SOURCE}/tasks`);
    expect(tasks.body.items).toEqual([expect.objectContaining({ title: 'Find the answer', state: 'running' })]);

    const second = await ws.waitFor((f) => f.type === 'done' && f.content === 'The background task says 42.', 90_000);
    expect(second.session_id).toBe(parent);
    expect(await ws.waitFor((f) => f.type === 'task_update' && f.state === 'completed')).toMatchObject({
      job_id: running.job_id,
    });
    const tree = (await api.get<Tree>(`/api/sessions/${parent}`)).body;
    const delivered = tree.messages.filter((x) => x.kind === 'tool' && x.name === 'task_completed');
    expect(delivered).toEqual([
      expect.objectContaining({ status: 'done', result: 'The answer is 42.', is_synthetic: true }),
    ]);
    // a finished task is a message in the conversation, not on the strip
    expect((await api.get<{ items: unknown[] }>(`/api/${SOURCE}/tasks`)).body.items).toEqual([]);
    // the task ran as its own ephemeral session
    const [task] = await db.query<Array<{ source: string; is_ephemeral: boolean; scratchpad_session_id: string }>>(
      `SELECT source, is_ephemeral, scratchpad_session_id FROM sessions WHERE id = $1`,
      [running.session_id],
    );
    expect(task).toEqual({ source: 'task', is_ephemeral: true, scratchpad_session_id: parent });
    ws.close();
  });

  it('five parallel async tasks share the parent scratchpad (last writer wins) and each ends in the parent once', async () => {
    const api = await user();
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: SOURCE });
    const parent = (await ws.waitForType('hello')).session_id as string;
    const m = randomUUID();
    const n = [1, 2, 3, 4, 5];
    await sim.script({
      match: `[P5-${m}]`,
      replies: [
        {
          content: 'Five at once.',
          tool_calls: n.map((i) => ({
            name: 'execute_task',
            arguments: { agent_id: 'generalist', prompt: `Part ${i} [C${i}-${m}]`, title: `Part ${i}`, mode: 'async' },
          })),
        },
        ...Array.from({ length: 8 }, () => ({ content: 'Noted.' })),
      ],
    });
    for (const i of n)
      await sim.script({
        match: `[C${i}-${m}]`,
        replies: [
          {
            content: '',
            tool_calls: [
              { name: 'update_scratchpad', arguments: { key: `part_${i}`, value: `result ${i}` } },
              { name: 'update_scratchpad', arguments: { key: 'last', value: `part ${i}` } },
            ],
          },
          { content: `Part ${i} done.` },
        ],
      });
    ws.send({ type: 'message', client_message_id: `c-${m}`, content: `Split it [P5-${m}]` });
    const tree = await until(
      'five task_completed rows in the parent',
      async () => {
        const t = (await api.get<Tree>(`/api/sessions/${parent}`)).body;
        return t.messages.filter((x) => x.name === 'task_completed').length >= 5 ? t : null;
      },
      120_000,
    );
    const results = tree.messages.filter((x) => x.name === 'task_completed').map((x) => x.result);
    expect([...results].sort()).toEqual(n.map((i) => `Part ${i} done.`));
    const pad = await db.query<Array<{ key: string; value: string }>>(
      `SELECT key, value FROM session_scratchpad WHERE scratchpad_session_id = $1 ORDER BY key`,
      [parent],
    );
    expect(pad.filter((p) => p.key.startsWith('part_'))).toEqual(
      n.map((i) => ({ key: `part_${i}`, value: `result ${i}` })),
    );
    expect(n.map((i) => `part ${i}`)).toContain(pad.find((p) => p.key === 'last')?.value);
    // each task is its own session; none of them has a pad of its own
    const own = await db.query<unknown[]>(
      `SELECT 1 FROM session_scratchpad p JOIN sessions s ON s.id = p.scratchpad_session_id
        WHERE s.user_id = $1 AND s.source = 'task'`,
      [api.user!.id],
    );
    expect(own).toEqual([]);
    ws.close();
  });

  it("an approval inside an async task goes to the user's inbox; once approved the task finishes and reports", async () => {
    const api = await user();
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: SOURCE });
    const parent = (await ws.waitForType('hello')).session_id as string;
    const m = randomUUID();
    await sim.script({
      match: `[PA-${m}]`,
      replies: [
        {
          content: '',
          tool_calls: [
            {
              name: 'execute_task',
              arguments: { agent_id: 'generalist', prompt: `Write the plan [CA-${m}]`, title: 'Plan', mode: 'async' },
            },
          ],
        },
        { content: 'Working on it.' },
        { content: 'The plan is written.' },
      ],
    });
    await sim.script({
      match: `[CA-${m}]`,
      replies: [
        { content: '', tool_calls: [{ name: 'write_file', arguments: { path: 'plan.md', content: '# Plan\n' } }] },
        { content: 'Wrote plan.md.' },
      ],
    });
    ws.send({ type: 'message', client_message_id: `c-${m}`, content: `Plan it [PA-${m}]` });
    const requested = await ws.waitFor((f) => f.type === 'approval_requested', 60_000);
    expect(requested.session_id).not.toBe(parent);
    const inbox = await api.get<{ approvals: Array<{ request_id: string; session_id: string }> }>('/api/inbox');
    expect(inbox.body.approvals).toEqual([
      expect.objectContaining({ request_id: requested.request_id, session_id: requested.session_id }),
    ]);
    const resolved = await api.post(`/api/inbox/approvals/${String(requested.request_id)}/resolve`, {
      action: 'approve',
    });
    expect(resolved.status).toBe(200);
    await ws.waitFor((f) => f.type === 'done' && f.content === 'The plan is written.', 90_000);
    const tree = (await api.get<Tree>(`/api/sessions/${parent}`)).body;
    expect(tree.messages.filter((x) => x.name === 'task_completed')).toEqual([
      expect.objectContaining({ result: 'Wrote plan.md.' }),
    ]);
    ws.close();
  });

  it('a cron job over REST with three scheduler replicas: once per due time, each run its own ephemeral cron session, the result in the home source', async () => {
    const api = await user();
    const web = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: 'web' });
    const home = (await web.waitForType('hello')).session_id as string;
    const m = randomUUID();
    await sim.script({
      match: `[K-${m}]`,
      replies: Array.from({ length: 20 }, () => ({ content: `3 new mails [H-${m}]` })),
    });
    await sim.script({
      match: `[H-${m}]`,
      replies: Array.from({ length: 20 }, () => ({ content: 'You have 3 new mails.' })),
    });
    const bad = await api.post<{ error: { field: string } }>('/api/cron/jobs', {
      title: 'x',
      prompt: 'x',
      cron: '* * *',
    });
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', field: 'cron' } } });
    // a pre-authorised path is a directory, never a pattern, and never outside the workspace
    for (const [paths, why] of [
      [['proj/*'], 'covers everything under it'],
      [['/etc'], '/etc'],
    ] as const) {
      const refused = await api.post<{ error: { field: string; message: string } }>('/api/cron/jobs', {
        title: 'x',
        prompt: 'x',
        cron: '0 3 * * *',
        run_context: { allow_fs_writes: paths },
      });
      expect(refused).toMatchObject({
        status: 400,
        body: { error: { code: 'invalid_input', field: 'run_context.allow_fs_writes.0' } },
      });
      expect(refused.body.error.message).toContain(why);
    }
    const created = await api.post<{ id: string }>('/api/cron/jobs', {
      title: 'Inbox',
      prompt: `Summarise my inbox [K-${m}]`,
      cron: '*/3 * * * * *',
      timezone: 'Europe/Berlin',
    });
    expect(created.status).toBe(201);
    const jobId = created.body.id;
    await sleep(11_000);
    const toggled = await api.post<{ enabled: boolean }>(`/api/cron/jobs/${jobId}/toggle`);
    expect(toggled.body.enabled).toBe(false);
    await until('the open runs to end', async () => (await runsOf(jobId)).every((r) => r.delivered_at !== null));
    const runs = await runsOf(jobId);
    expect(runs.length).toBeGreaterThanOrEqual(2);
    expect(runs.length).toBeLessThanOrEqual(5);
    const dues = runs.map((r) => r.due_at.getTime());
    expect(new Set(dues).size).toBe(dues.length);
    for (const d of dues) expect(d % 3000).toBe(0);
    // one session per run, never a second one for the same fire
    const sessions = await db.query<Array<{ id: string; source: string; is_ephemeral: boolean }>>(
      `SELECT id, source, is_ephemeral FROM sessions WHERE user_id = $1 AND source = 'cron'`,
      [api.user!.id],
    );
    expect(sessions.map((s) => s.id).sort()).toEqual(runs.map((r) => r.session_id).sort());
    expect(sessions.every((s) => s.is_ephemeral)).toBe(true);
    const listed = await api.get<{ items: Array<{ status: string; final_response?: string }> }>(
      `/api/cron/runs?job_id=${jobId}`,
    );
    expect(listed.body.items).toHaveLength(runs.length);
    for (const r of listed.body.items)
      expect(r).toMatchObject({ status: 'succeeded', final_response: `3 new mails [H-${m}]` });
    // delivered to the home source: one notification event and one read_notification call per run
    const notes = await until('a notification per run', async () => {
      const n = web.frames.filter((f) => f.type === 'notification' && (f.refs as { job_id?: string }).job_id === jobId);
      return n.length >= runs.length ? n : null;
    });
    expect(notes).toHaveLength(runs.length);
    const tree = await until('the read_notification rows', async () => {
      const t = (await api.get<Tree>(`/api/sessions/${home}`)).body;
      return t.messages.filter((x) => x.name === 'read_notification').length === runs.length ? t : null;
    });
    expect(tree.messages.filter((x) => x.name === 'read_notification').every((x) => x.status === 'done')).toBe(true);
    // the notification history is the truth behind the events, newest first, paged
    const history = await api.get<{
      items: Array<{ id: string; summary: string; refs: { job_id: string } }>;
      has_more: boolean;
    }>('/api/notifications?limit=1');
    expect(history.body).toMatchObject({ has_more: runs.length > 1 });
    expect(history.body.items).toEqual([
      expect.objectContaining({
        summary: `Cron job "Inbox" finished: 3 new mails [H-${m}]`,
        refs: expect.objectContaining({ job_id: jobId }),
      }),
    ]);
    const all = await api.get<{ items: Array<{ id: string }> }>('/api/notifications');
    expect(all.body.items.map((i) => i.id).sort()).toEqual(runs.map((r) => r.id).sort());
    const older = await api.get<{ items: Array<{ id: string }> }>(
      `/api/notifications?before=${history.body.items[0].id}`,
    );
    expect(older.body.items).toHaveLength(runs.length - 1);
    const jobs = await api.get<{ items: Array<{ id: string; enabled: boolean; timezone: string }> }>('/api/cron/jobs');
    expect(jobs.body.items).toEqual([
      expect.objectContaining({ id: jobId, enabled: false, timezone: 'Europe/Berlin' }),
    ]);
    web.close();
  });

  it('kill: 202, the running session is cancelled like /stop, the run ends cancelled and is reported once', async () => {
    const api = await user();
    const web = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: 'web' });
    await web.waitForType('hello');
    const m = randomUUID();
    await sim.script({ match: `[L-${m}]`, replies: [{ content: 'too late', latency: { firstByteMs: 30_000 } }] });
    const { body } = await api.post<{ id: string }>('/api/cron/jobs', {
      title: 'Slow',
      prompt: `Take your time [L-${m}]`,
      cron: '0 0 1 1 *',
      enabled: false,
    });
    const run = await api.post<{ run_id: string }>(`/api/cron/jobs/${body.id}/run`);
    expect(run.status).toBe(202);
    await until('the session to run', async () => {
      const jobs = await api.get<{ items: Array<{ running_session_id?: string }> }>('/api/cron/jobs');
      return jobs.body.items[0]?.running_session_id;
    });
    expect((await api.post(`/api/cron/jobs/${body.id}/run`)).status).toBe(409);
    const kill = await api.post<{ killed: boolean }>(`/api/cron/jobs/${body.id}/kill`);
    expect(kill).toMatchObject({ status: 202, body: { killed: true } });
    const [ended] = await until('the run to end', async () => {
      const r = await runsOf(body.id);
      return r[0]?.delivered_at ? r : null;
    });
    expect(ended).toMatchObject({ id: run.body.run_id, status: 'cancelled' });
    const note = await web.waitFor((f) => f.type === 'notification', 30_000);
    expect(note.summary).toBe('Cron job "Slow" was cancelled');
    web.close();
  });

  it("TIC: POST /api/tic/trigger runs the tic agent in an ephemeral tic session (409 while it runs); its answer is the run's record and no chat gets it", async () => {
    const api = await user();
    const web = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: 'web' });
    await web.waitForType('hello');
    const marker = `NOTHING-${randomUUID()}`;
    await sim.script({ match: 'System tick:', replies: [{ content: marker, latency: { firstByteMs: 1_500 } }] });
    const since = (await sim.requests()).at(-1)?.id ?? 0;

    const trigger = await api.post<{ run_id: string }>('/api/tic/trigger');
    expect(trigger.status).toBe(202);
    expect((await api.post<{ error: { code: string } }>('/api/tic/trigger')).status).toBe(409);

    const [run] = await until('the tick to end', async () => {
      const r = await db.query<Array<{ status: string; session_id: string; final_response: string | null }>>(
        `SELECT status, session_id, final_response FROM job_runs WHERE id = $1 AND delivered_at IS NOT NULL`,
        [trigger.body.run_id],
      );
      return r.length ? r : null;
    });
    expect(run).toMatchObject({ status: 'succeeded', final_response: marker });
    const [session] = await db.query<
      Array<{ source: string; agent_id: string; is_ephemeral: boolean; is_interactive: boolean }>
    >(`SELECT source, agent_id, is_ephemeral, is_interactive FROM sessions WHERE id = $1`, [run.session_id]);
    expect(session).toEqual({ source: 'tic', agent_id: 'tic', is_ephemeral: true, is_interactive: false });
    // The model was asked as the tic agent, with the tick as the user's message.
    const asked = (await sim.requests({ sinceId: since, contains: 'System tick:' }))[0];
    expect(JSON.stringify(asked.body)).toContain('You are Tic');
    // Nothing reached the user's chat: no turn, no notification for a tick.
    await sleep(500);
    expect(web.frames.filter((f) => ['user_message', 'done', 'notification'].includes(f.type))).toEqual([]);
    web.close();
  });

  it('TIC: a new user gets the periodic tick without pressing anything (an enabled hourly tic job)', async () => {
    const api = await user();
    const [tic] = await until('the tic job of the new user', async () => {
      const r = await db.query<Array<{ cron: string; enabled: boolean; agent_id: string; next_run_at: Date | null }>>(
        `SELECT cron, enabled, agent_id, next_run_at FROM scheduled_jobs WHERE user_id = $1 AND kind = 'tic'`,
        [api.user!.id],
      );
      return r.length ? r : null;
    });
    expect(tic).toMatchObject({ cron: '0 * * * *', enabled: true, agent_id: 'tic' });
    expect(new Date(tic.next_run_at!).getTime()).toBeGreaterThan(Date.now());
  });

  async function processOf(name: 'scheduler' | 'session-worker', instance: string): Promise<StackProcess> {
    const p = stack.byName(name).find((x) => x.instance === instance);
    if (!p) throw new Error(`no ${name} ${instance}`);
    return p;
  }

  it('kill -9 of the scheduler that started a run: another replica adopts it, no second session, reported once', async () => {
    const api = await user();
    const m = randomUUID();
    await sim.script({ match: `[S-${m}]`, replies: [{ content: 'survived', latency: { firstByteMs: 5_000 } }] });
    const { body } = await api.post<{ id: string }>('/api/cron/jobs', {
      title: 'Crash',
      prompt: `Keep going [S-${m}]`,
      cron: '0 0 1 1 *',
      enabled: false,
    });
    await api.post(`/api/cron/jobs/${body.id}/run`);
    const [run] = await until('the run to start', async () => {
      const r = await runsOf(body.id);
      return r[0]?.session_id ? r : null;
    });
    (await processOf('scheduler', run.runner)).child.kill('SIGKILL');
    const [done] = await until('the run to be reported', async () => {
      const r = await runsOf(body.id);
      return r[0]?.delivered_at ? r : null;
    });
    expect(done).toMatchObject({ status: 'succeeded', session_id: run.session_id });
    expect(done.runner).not.toBe(run.runner);
    const sessions = await db.query<unknown[]>(`SELECT id FROM sessions WHERE user_id = $1 AND source = 'cron'`, [
      api.user!.id,
    ]);
    expect(sessions).toHaveLength(1);
    const [{ n }] = await db.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM session_inbox WHERE user_id = $1 AND tool_result IS NOT NULL`,
      [api.user!.id],
    );
    expect(n).toBe(1);
  });

  it('kill -9 of the session worker running a job: recovered by the other worker, delivered once', async () => {
    const api = await user();
    const m = randomUUID();
    await sim.script({
      match: `[W-${m}]`,
      replies: [{ content: 'lost with the worker', latency: { firstByteMs: 4_000 } }, { content: 'recovered answer' }],
    });
    const { body } = await api.post<{ id: string }>('/api/cron/jobs', {
      title: 'Worker crash',
      prompt: `Work [W-${m}]`,
      cron: '0 0 1 1 *',
      enabled: false,
    });
    const run = await api.post<{ run_id: string }>(`/api/cron/jobs/${body.id}/run`);
    const sessionId = run.body.run_id;
    const driver = await until('a worker to drive the job session', () =>
      Promise.resolve(
        stack
          .byName('session-worker')
          .find(
            (w) =>
              w.child.exitCode === null && w.logs.some((l) => l.includes(sessionId) && l.includes('"turn started"')),
          ) ?? null,
      ),
    );
    await sleep(500);
    driver.child.kill('SIGKILL');
    const [done] = await until(
      'the run to be reported',
      async () => {
        const r = await runsOf(body.id);
        return r[0]?.delivered_at ? r : null;
      },
      90_000,
    );
    expect(done).toMatchObject({ status: 'succeeded' });
    const listed = await api.get<{ items: Array<{ final_response?: string }> }>(`/api/cron/runs?job_id=${body.id}`);
    expect(listed.body.items).toEqual([expect.objectContaining({ final_response: 'recovered answer' })]);
    const [{ n }] = await db.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM session_inbox WHERE user_id = $1 AND tool_result IS NOT NULL`,
      [api.user!.id],
    );
    expect(n).toBe(1);
  });
  // Last: a failing model call may mark the stack's only LLM client unhealthy for a while.
  it('an async task that fails reaches the parent as prose with its partial output; the strip shows the failure', async () => {
    const api = await user();
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: SOURCE });
    const parent = (await ws.waitForType('hello')).session_id as string;
    const m = randomUUID();
    await sim.script({
      match: `[PF-${m}]`,
      replies: [
        {
          content: '',
          tool_calls: [
            {
              name: 'execute_task',
              arguments: { agent_id: 'generalist', prompt: `Doomed work [CF-${m}]`, title: 'Doomed', mode: 'async' },
            },
          ],
        },
        { content: 'Started.' },
        { content: 'The task failed; I will tell you what it found.' },
      ],
    });
    await sim.script({
      match: `[CF-${m}]`,
      replies: [
        {
          content: 'Found one clue.',
          tool_calls: [{ name: 'update_scratchpad', arguments: { key: 'clue', value: 'the butler' } }],
        },
        { fail: { kind: 'http_error', status: 400, message: 'the request was malformed' } },
      ],
      repeatLast: true,
    });
    ws.send({ type: 'message', client_message_id: `c-${m}`, content: `Investigate [PF-${m}]` });
    const failed = await ws.waitFor((f) => f.type === 'task_update' && f.state === 'failed', 120_000);
    expect(failed).toMatchObject({ title: 'Doomed', source: SOURCE });
    await ws.waitFor(
      (f) => f.type === 'done' && f.content === 'The task failed; I will tell you what it found.',
      60_000,
    );
    const tree = (await api.get<Tree>(`/api/sessions/${parent}`)).body;
    const [delivered] = tree.messages.filter((x) => x.name === 'task_completed');
    expect(delivered?.result).toMatch(/^The task "Doomed" failed: .+\. Partial output before it ended:\n/s);
    expect(delivered?.result).toContain('Found one clue.');
    const strip = await api.get<{ items: Array<{ title: string; state: string; error?: string }> }>(
      `/api/${SOURCE}/tasks`,
    );
    expect(strip.body.items).toEqual([
      expect.objectContaining({ title: 'Doomed', state: 'failed', error: expect.any(String) }),
    ]);
    ws.close();
  });
});
