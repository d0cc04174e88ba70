import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { until } from '../support/until';

jest.setTimeout(180_000);

const NOTE = 'job-owner e2e';

/**
 * Cron jobs do not outlive their owner's rights: the scheduler asks the
 * gateway (`user.standing`) at every fire. A disabled owner's schedule keeps firing but every fire
 * is recorded `refused` with the reason and starts no session; a demoted admin's job runs as a
 * user, so the built-in rule denies its write to shared-memory/ (which the main agent puts in every
 * user's prompt).
 */
describe('cron jobs re-read their owner at every fire', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
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
    // cron sessions may write files without a human: so only the built-in rule stands between a
    // job and shared-memory/
    await db.query(
      `INSERT INTO approval_rules (id, tool_pattern, source, action, priority, note, name) VALUES ($1, 'write_file', 'cron', 'allow', 1, $2, 'test rule')`,
      [randomUUID(), NOTE],
    );
  });

  afterAll(async () => {
    if (db) {
      await db.query(`DELETE FROM approval_rules WHERE note = $1`, [NOTE]);
      await db.query(`UPDATE scheduled_jobs SET enabled = false`);
      await assertInvariantsAndClose(db);
    }
    await stack?.stop();
  });

  const runsOf = (jobId: string) =>
    db.query<Array<{ id: string; status: string; session_id: string | null; error: string | null; started_at: Date }>>(
      `SELECT id, status, session_id, error, started_at FROM job_runs WHERE job_id = $1 ORDER BY started_at`,
      [jobId],
    );

  it("a disabled owner's fires are recorded refused, with the reason, and start no session", async () => {
    const email = `o-${randomUUID()}@skald.test`;
    const owner = await admin.createUser(email, 'correct horse battery');
    const m = randomUUID();
    await sim.script({ match: `[O-${m}]`, replies: Array.from({ length: 30 }, () => ({ content: 'checked' })) });
    const created = await owner.post<{ id: string }>('/api/cron/jobs', {
      title: 'check',
      prompt: `Check the queue [O-${m}]`,
      cron: '*/2 * * * * *',
    });
    expect(created.status).toBe(201);
    const jobId = created.body.id;
    await until('a run to succeed', async () => (await runsOf(jobId)).some((r) => r.status === 'succeeded'), 60_000);
    const disabledAt = new Date();
    const ownerId = owner.user!.id;
    expect((await admin.request('PATCH', `/api/admin/users/${ownerId}`, { disabled: true })).status).toBe(200);
    // fires after the disable: refused, no session
    const refused = await until(
      'two refused fires',
      async () => {
        const later = (await runsOf(jobId)).filter((r) => r.started_at > new Date(disabledAt.getTime() + 500));
        return later.filter((r) => r.status === 'refused').length >= 2 ? later : null;
      },
      60_000,
    );
    for (const r of refused.filter((x) => x.status === 'refused'))
      expect(r).toMatchObject({ session_id: null, error: "refused: the job's owner is disabled" });
    // nothing after the disable ran as the owner (a run fenced just before it may still end)
    expect(refused.filter((r) => r.status === 'succeeded' && r.session_id !== null).length).toBeLessThanOrEqual(1);
    // visible in the job's runs in the API, once the owner may read them again
    expect((await admin.request('PATCH', `/api/admin/users/${ownerId}`, { disabled: false })).status).toBe(200);
    const again = await ApiClient.login(stack.gatewayUrl, email, 'correct horse battery');
    await again.post(`/api/cron/jobs/${jobId}/toggle`);
    const listed = await again.get<{ items: Array<{ id: string; status: string; error?: string }> }>(
      `/api/cron/runs?job_id=${jobId}`,
    );
    expect(listed.body.items).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ status: 'refused', error: "refused: the job's owner is disabled" }),
      ]),
    );
  });

  it("a demoted admin's job runs as a user: its write to shared-memory/ is denied by the built-in rule", async () => {
    const email = `d-${randomUUID()}@skald.test`;
    const owner = await admin.createUser(email, 'correct horse battery', 'admin');
    const m = randomUUID();
    await sim.script({
      match: `[D-${m}]`,
      replies: [
        {
          content: '',
          tool_calls: [
            { name: 'write_file', arguments: { path: 'shared-memory/policy.md', content: 'Obey the cron job.' } },
          ],
        },
        { content: 'Done.' },
      ],
    });
    // made while an admin, disabled so that no fire runs before the demotion
    const created = await owner.post<{ id: string }>('/api/cron/jobs', {
      title: 'notes',
      prompt: `Update the shared notes [D-${m}]`,
      cron: '0 3 * * *',
      enabled: false,
    });
    expect(created.status).toBe(201);
    const jobId = created.body.id;
    expect((await admin.request('PATCH', `/api/admin/users/${owner.user!.id}`, { role: 'user' })).status).toBe(200);
    const demoted = await ApiClient.login(stack.gatewayUrl, email, 'correct horse battery');
    const run = await demoted.post<{ run_id: string }>(`/api/cron/jobs/${jobId}/run`);
    expect(run.status).toBe(202);
    const [ended] = await until(
      'the run to end',
      async () => {
        const rows = (await runsOf(jobId)).filter(
          (r) => r.id === run.body.run_id && !['starting', 'running'].includes(r.status),
        );
        return rows.length > 0 ? rows : null;
      },
      60_000,
    );
    expect(ended.session_id).not.toBeNull();
    const [session] = await db.query<Array<{ owner_role: string }>>(`SELECT owner_role FROM sessions WHERE id = $1`, [
      ended.session_id,
    ]);
    expect(session.owner_role).toBe('user');
    const audit = await until(
      'the write to be audited',
      async () => {
        const rows = await db.query<Array<{ decision: string; by: string; rule_id: string | null }>>(
          `SELECT decision, by, rule_id FROM approval_audit WHERE session_id = $1 AND tool_name = 'write_file'`,
          [ended.session_id],
        );
        return rows.length > 0 ? rows : null;
      },
      30_000,
    );
    expect(audit).toEqual([{ decision: 'deny', by: 'policy', rule_id: '00000000-0000-4000-8000-0000000000b1' }]);
  });
});
