import { existsSync } from 'node:fs';
import { mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { until } from '../support/until';

jest.setTimeout(180_000);

interface Tree {
  messages: Array<{ kind: string; name?: string; status?: string; result?: string | null }>;
}

/**
 * Through the real stack: the worker asks the runner where a write lands
 * (`tools.resolve`), the gate judges that path too, and a deny on where it lands denies.
 */
describe('gate landing: a pre-authorised path through a symlink into .git/hooks', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  const NOTE = `gate-landing e2e ${randomUUID()}`;

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

  it('docs/assets → ../../.git/hooks: the write is denied where it lands and nothing reaches .git/hooks', async () => {
    const api = await admin.createUser(`l-${randomUUID()}@skald.test`, 'correct horse battery');
    const m = randomUUID().slice(0, 8);
    const rule = await admin.post<{ id: string }>('/api/approval/rules', {
      tool_pattern: '@fs_write',
      path_pattern: '/workspace/.git/**',
      action: 'deny',
      priority: 1,
      note: NOTE,
    });
    expect(rule.status).toBe(201);
    const home = path.join(stack.env.SKALD_WORKSPACES, api.user!.id);
    await mkdir(path.join(home, '.git/hooks'), { recursive: true });
    await mkdir(path.join(home, 'proj/docs'), { recursive: true });
    await symlink('../../.git/hooks', path.join(home, 'proj/docs/assets'));
    await sim.script({
      match: `[L-${m}]`,
      replies: [
        {
          tool_calls: [
            { name: 'write_file', arguments: { path: '/workspace/proj/docs/assets/post-checkout', content: 'pwn' } },
            { name: 'write_file', arguments: { path: '/workspace/proj/docs/readme.md', content: `ok ${m}` } },
          ],
        },
        { content: `done [M-${m}]` },
      ],
    });
    await sim.script({ match: `[M-${m}]`, replies: Array.from({ length: 3 }, () => ({ content: 'noted' })) });
    const job = await api.post<{ id: string }>('/api/cron/jobs', {
      title: 'docs',
      prompt: `Write the docs [L-${m}]`,
      cron: '0 0 1 1 *',
      enabled: false,
      run_context: { working_directory: '/workspace/proj', allow_fs_writes: ['/workspace/proj/docs'] },
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
    const tree = (await api.get<Tree>(`/api/sessions/${run.session_id}`)).body;
    const tools = tree.messages.filter((x) => x.kind === 'tool').map((x) => [x.name, x.status]);
    expect(tools).toEqual([
      ['write_file', 'rejected'],
      ['write_file', 'done'],
    ]);
    expect(existsSync(path.join(home, '.git/hooks/post-checkout'))).toBe(false);
    expect(existsSync(path.join(home, 'proj/docs/readme.md'))).toBe(true);
    const audit = await until('the audit to be written', async () => {
      const a = await api.get<{ items: Array<{ tool_name: string; decision: string; by: string; rule_id?: string }> }>(
        `/api/approval/audit?session_id=${run.session_id}`,
      );
      return a.body.items.length >= 2 ? a.body.items : null;
    });
    expect(audit).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ tool_name: 'write_file', decision: 'deny', by: 'rule', rule_id: rule.body.id }),
        expect.objectContaining({ tool_name: 'write_file', decision: 'allow', by: 'run_context' }),
      ]),
    );
  });
});
