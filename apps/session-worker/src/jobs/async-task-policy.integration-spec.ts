import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { AgentCatalogService } from '../agents/agent-catalog.service';
import { ConversationsRepository } from '../sessions/conversations.repository';
import { RunContextRepository } from '../sessions/run-context.repository';
import { SessionsRepository } from '../sessions/sessions.repository';
import type { SubmitService } from '../submit/submit.service';
import { DeliveryRouting } from './delivery-routing.service';
import { JobSessionsRepository } from './job-sessions.repository';
import { JobSessionsService } from './job-sessions.service';
import { UserSettingsRepository } from '../settings/user-settings.repository';

jest.setTimeout(60_000);

/**
 * An async task runs under its parent conversation's policy as the parent's row says when the
 * task's session is created (its fire), never under the default rules: the security group an
 * admin chose, the working directory and the pre-authorised paths. A client's RunContext is never
 * a source; a parent that no longer exists starts nothing.
 */
describe("an async task's session takes its parent's policy at its fire", () => {
  let ds: DataSource;
  let sessions: SessionsRepository;
  let runContexts: RunContextRepository;
  let conversations: ConversationsRepository;
  let jobs: JobSessionsService;
  const woken: string[] = [];

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 4 } });
    await ds.initialize();
    sessions = new SessionsRepository(ds);
    runContexts = new RunContextRepository(ds);
    conversations = new ConversationsRepository(ds);
    const repo = new JobSessionsRepository(ds);
    const routing = new DeliveryRouting(sessions, new UserSettingsRepository(ds), repo);
    const catalog = { exists: () => Promise.resolve(true) } as unknown as AgentCatalogService;
    const submit = { wake: (id: string) => woken.push(id) } as unknown as SubmitService;
    jobs = new JobSessionsService(catalog, repo, sessions, submit, routing);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  /** A user's conversation, placed by an admin in `group` with a RunContext (the admin's PUT). */
  async function parentIn(group: string) {
    const userId = randomUUID();
    const parent = (await sessions.active({ userId, source: 'web' })).id;
    await runContexts.set(
      { userId, sessionId: parent },
      {
        working_directory: '/workspace/proj',
        system_prompt: ['Answer in French.'],
        allow_fs_reads: ['/workspace/proj/docs'],
        allow_fs_writes: ['/workspace/proj/out'],
      },
      group,
    );
    return { userId, parent };
  }

  /** The fire: the scheduler asks a worker to start the task's session (a client may name any RunContext). */
  const fire = (userId: string, parent: string, runContext: Record<string, unknown> = {}) => {
    const runId = randomUUID();
    return {
      runId,
      started: jobs.start({
        actor: { userId, role: 'user' },
        runId,
        kind: 'async',
        agentId: 'generalist',
        prompt: 'research this',
        runContext,
        scratchpadSessionId: parent,
        parentSessionId: parent,
        client: null,
      }),
    };
  };

  it("the task's session has the parent's group, working directory and pre-authorised paths", async () => {
    const { userId, parent } = await parentIn('locked');
    // the run_context of the request is not a source, whatever it names
    const { runId, started } = fire(userId, parent, {
      security_group: 'open',
      allow_fs_writes: ['/workspace'],
      enabled_mcp_servers: ['other'],
    });
    expect(await started).toEqual({ session_id: runId, created: true });
    expect(await runContexts.get({ userId, sessionId: runId })).toEqual({
      security_group: 'locked',
      working_directory: '/workspace/proj',
      allow_fs_reads: ['/workspace/proj/docs'],
      allow_fs_writes: ['/workspace/proj/out'],
      // the parent's pre-granted MCP servers (none)
      enabled_mcp_servers: [],
      // the parent's prompt parts are its own agent's, as with a sync sub-agent
      system_prompt: [],
    });
    expect(woken).toContain(runId);
  });

  it("an admin's change of the parent's group between the submit and the fire is what the task runs under", async () => {
    const { userId, parent } = await parentIn('reviewers');
    // the task is submitted now (the scheduler stores only the parent's id) ...
    const rc = await runContexts.get({ userId, sessionId: parent });
    // ... and before it fires an admin moves the conversation to another group and clears its paths
    await runContexts.set({ userId, sessionId: parent }, { working_directory: rc!.working_directory! }, 'quarantine');
    const { runId, started } = fire(userId, parent);
    await started;
    expect(await runContexts.get({ userId, sessionId: runId })).toMatchObject({
      security_group: 'quarantine',
      allow_fs_reads: [],
      allow_fs_writes: [],
    });
  });

  it('a reset conversation (/new) still exists: its policy applies', async () => {
    const { userId, parent } = await parentIn('locked');
    await sessions.active({ userId, source: 'web' }, true);
    const { runId, started } = fire(userId, parent);
    await started;
    expect(await runContexts.get({ userId, sessionId: runId })).toMatchObject({ security_group: 'locked' });
  });

  it('a deleted parent: the task does not start, and the refusal says why', async () => {
    const { userId, parent } = await parentIn('locked');
    await conversations.delete({ userId, sessionId: parent });
    const { runId, started } = fire(userId, parent);
    await expect(started).rejects.toMatchObject({
      body: {
        code: 'not_found',
        message: 'the conversation that started this task was deleted, so the task did not run',
      },
    });
    const rows = await ds.query<unknown[]>(`SELECT 1 FROM sessions WHERE id = $1`, [runId]);
    expect(rows).toEqual([]);
    expect(woken).not.toContain(runId);
  });

  it("another user's conversation is no parent: the task does not start", async () => {
    const { parent } = await parentIn('locked');
    const stranger = randomUUID();
    const { runId, started } = fire(stranger, parent);
    await expect(started).rejects.toMatchObject({ body: { code: 'not_found' } });
    expect(await ds.query<unknown[]>(`SELECT 1 FROM sessions WHERE id = $1`, [runId])).toEqual([]);
  });

  it('a start asked again after the parent was deleted finds the session it created (idempotent)', async () => {
    const { userId, parent } = await parentIn('locked');
    const first = fire(userId, parent);
    await first.started;
    await conversations.delete({ userId, sessionId: parent });
    const again = await jobs.start({
      actor: { userId, role: 'user' },
      runId: first.runId,
      kind: 'async',
      agentId: 'generalist',
      prompt: 'research this',
      runContext: {},
      scratchpadSessionId: parent,
      parentSessionId: parent,
      client: null,
    });
    expect(again).toEqual({ session_id: first.runId, created: false });
    expect(await runContexts.get({ userId, sessionId: first.runId })).toMatchObject({ security_group: 'locked' });
  });
});
