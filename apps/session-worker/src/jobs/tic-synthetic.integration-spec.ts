import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { inboxEntry } from '@skald/agent-loop';
import type { AgentCatalogService } from '../agents/agent-catalog.service';
import { LeaseRepository } from '../lease/lease.repository';
import { toSessionDetail } from '../sessions/debug-tree';
import { SessionsRepository } from '../sessions/sessions.repository';
import { PgSessionStore } from '../loop-adapters/session-store/pg-session-store';
import type { SubmitService } from '../submit/submit.service';
import { openRootFrame } from '../testing-fixtures/root-frame';
import { JobSessionsRepository } from './job-sessions.repository';
import { JobSessionsService } from './job-sessions.service';

jest.setTimeout(60_000);

/**
 * A tic's periodic prompt is system-made (spec 000: `is_synthetic` is true for ticks): it flows
 * from the inbox row to the chat row, is not echoed as `user_message`, and the debug tree marks it;
 * a cron prompt (the user's own words) stays a user message.
 */
describe('a tic prompt is a synthetic message, from the inbox to the history', () => {
  let ds: DataSource;
  let jobs: JobSessionsService;
  let sessions: SessionsRepository;
  let leases: LeaseRepository;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 4 } });
    await ds.initialize();
    sessions = new SessionsRepository(ds);
    leases = new LeaseRepository(ds);
    const catalog = { exists: async () => true } as unknown as AgentCatalogService;
    const submit = { wake: () => undefined } as unknown as SubmitService;
    jobs = new JobSessionsService(catalog, new JobSessionsRepository(ds), sessions, submit, null as never);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  /** Starts a job session and enters its prompt as the loop's first commit does. */
  async function run(kind: 'tic' | 'cron', prompt: string) {
    const userId = randomUUID();
    const runId = randomUUID();
    await jobs.start({
      actor: { userId, role: 'user' },
      runId,
      kind,
      agentId: 'main',
      prompt,
      runContext: {},
      parentSessionId: null,
      scratchpadSessionId: null,
      client: null,
    });
    const lease = (await leases.acquire(runId, `w-${randomUUID()}`, 60_000))!;
    const store = new PgSessionStore(ds, { owner: lease.owner, epoch: lease.epoch }, () => undefined);
    const frameId = randomUUID();
    await store.commit(runId, [openRootFrame(runId, frameId)], []);
    const [item] = await store.listInbox(runId);
    const turn = {
      session: { id: runId },
      deps: { ids: { newId: () => randomUUID() }, clock: { now: () => new Date() } },
    } as unknown as Parameters<typeof inboxEntry>[0];
    const entry = inboxEntry(turn, frameId, item);
    await store.commit(runId, entry.mutations, entry.events);
    const events = await ds.query<Array<{ type: string }>>(
      `SELECT type FROM session_events WHERE session_id = $1 ORDER BY seq`,
      [runId],
    );
    const detail = toSessionDetail(
      (await sessions.find({ userId, sessionId: runId }))!,
      await sessions.frames(runId),
      await sessions.messages(runId),
      await sessions.toolCalls(runId),
    );
    return { item, events: events.map((e) => e.type), detail, history: await store.listMessages(frameId) };
  }

  it('tic: stored synthetic, not echoed, marked in the debug tree, still in the model history', async () => {
    const r = await run('tic', 'Periodic check: anything to do?');
    expect(r.item.isSynthetic).toBe(true);
    expect(r.events).not.toContain('user_message');
    expect(r.detail.messages).toEqual([
      expect.objectContaining({ kind: 'user', content: 'Periodic check: anything to do?', is_synthetic: true }),
    ]);
    expect(r.history).toEqual([expect.objectContaining({ role: 'user', isSynthetic: true })]);
  });

  it('cron: the prompt stays a user message, echoed', async () => {
    const r = await run('cron', 'Summarise my inbox');
    expect(r.events).toContain('user_message');
    expect(r.detail.messages).toEqual([
      expect.objectContaining({ kind: 'user', content: 'Summarise my inbox', is_synthetic: false }),
    ]);
  });
});
