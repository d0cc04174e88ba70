/**
 * JobSessionsService with faked repositories: what the scheduler gets back — an unknown agent or an
 * async task without a parent refused before anything is created, nobody-to-ask jobs auto-denied
 * unless their RunContext allows approvals, a job's ending read from its rows, and a delivery into
 * a reset conversation rerouted home (bounded).
 */
import { Actor, JobRunContext } from '@skald/contracts';
import { newTestService } from '@skald/testing/unit';
import { AgentCatalogService } from '../agents/agent-catalog.service';
import { SessionsRepository } from '../sessions/sessions.repository';
import { SubmitService } from '../submit/submit.service';
import { DeliveryRouting } from './delivery-routing.service';
import { JobSessionsRepository } from './job-sessions.repository';
import { JobSessionsService } from './job-sessions.service';
import { sessionRow } from '../testing-fixtures/session-row';

const actor = { userId: 'u1', role: 'user' } as Actor;
const job = (over: Partial<Parameters<JobSessionsService['start']>[0]> = {}) => ({
  actor,
  runId: 'run1',
  kind: 'cron' as const,
  agentId: 'main',
  prompt: 'check the news',
  runContext: {} as JobRunContext,
  parentSessionId: null,
  scratchpadSessionId: null,
  client: null,
  ...over,
});

function setUp() {
  const t = newTestService(JobSessionsService);
  t.mock(AgentCatalogService).exists.mockResolvedValue(true);
  const repo = t.mock(JobSessionsRepository);
  repo.createJobSession.mockResolvedValue({ outcome: 'created' } as never);
  return { ...t, repo, submit: t.mock(SubmitService) };
}

describe('JobSessionsService.start', () => {
  it('starts a cron run auto-denied (nobody is there to approve) and wakes it', async () => {
    const { sut, repo, submit } = setUp();
    expect(await sut.start(job())).toEqual({ session_id: 'run1', created: true });
    expect(repo.createJobSession).toHaveBeenCalledWith(
      expect.objectContaining({
        source: 'cron',
        autoDeny: true,
        synthetic: false,
        policy: { from: 'job', runContext: {} },
      }),
    );
    expect(submit.wake).toHaveBeenCalledWith('run1');
  });

  it("lets a job's RunContext allow approvals, and sends an async task's to the inbox under its parent's rules", async () => {
    const { sut, repo } = setUp();
    await sut.start(job({ runContext: { allow_approvals: true } }));
    expect(repo.createJobSession).toHaveBeenLastCalledWith(expect.objectContaining({ autoDeny: false }));
    await sut.start(job({ kind: 'async', parentSessionId: 'p1', scratchpadSessionId: 'p1' }));
    expect(repo.createJobSession).toHaveBeenLastCalledWith(
      expect.objectContaining({ source: 'task', autoDeny: false, policy: { from: 'parent', parentSessionId: 'p1' } }),
    );
  });

  it('refuses an unknown agent and a parentless async task before creating anything', async () => {
    const { sut, repo, mock } = setUp();
    await expect(sut.start(job({ kind: 'async' }))).rejects.toMatchObject({
      body: { code: 'invalid_input', field: 'parent_session_id' },
    });
    mock(AgentCatalogService).exists.mockResolvedValue(false);
    await expect(sut.start(job({ agentId: 'ghost' }))).rejects.toMatchObject({
      body: { code: 'invalid_input', field: 'agent_id' },
    });
    expect(repo.createJobSession).not.toHaveBeenCalled();
  });

  it("answers not_found when an async task's parent conversation is gone", async () => {
    const { sut, repo, submit } = setUp();
    repo.createJobSession.mockResolvedValue({ outcome: 'parent_gone' } as never);
    await expect(sut.start(job({ kind: 'async', parentSessionId: 'p1' }))).rejects.toMatchObject({
      body: { code: 'not_found' },
    });
    expect(submit.wake).not.toHaveBeenCalled();
  });
});

describe('JobSessionsService.status', () => {
  it('reads the ending from the rows: final text, cancelled, or failed with the message', async () => {
    const { sut, repo } = setUp();
    repo.session.mockResolvedValue(sessionRow({ turn_state: 'finished' }));
    repo.hasQueuedInput.mockResolvedValue(false);
    repo.partialOutput.mockResolvedValue('half');
    repo.lastEnding.mockResolvedValueOnce({ type: 'done', payload: { content: 'all good' } });
    expect(await sut.status(actor, 'run1')).toEqual({ state: 'ended', ending: 'final', final_text: 'all good' });
    repo.lastEnding.mockResolvedValueOnce({ type: 'error', payload: { code: 'interrupted' } });
    expect(await sut.status(actor, 'run1')).toEqual({ state: 'ended', ending: 'cancelled', partial_output: 'half' });
    repo.lastEnding.mockResolvedValueOnce({ type: 'error', payload: { code: 'llm', message: 'model down' } });
    expect(await sut.status(actor, 'run1')).toMatchObject({ ending: 'failed', error: 'model down' });
  });

  it('says running, and rings the doorbell, for a finished turn with input still queued', async () => {
    const { sut, repo, submit } = setUp();
    repo.session.mockResolvedValue(sessionRow({ turn_state: 'finished' }));
    repo.hasQueuedInput.mockResolvedValue(true);
    expect(await sut.status(actor, 'run1')).toEqual({ state: 'running' });
    expect(submit.wake).toHaveBeenCalledWith('run1');
  });
});

describe('JobSessionsService.deliver', () => {
  const delivery = {
    actor,
    deliveryId: 'd1',
    sessionId: 's1',
    toolName: 'task_completed',
    arguments: {},
    result: 'ok',
  };

  it('reroutes a delivery into a reset conversation to the home one, and wakes it', async () => {
    const { sut, repo, submit, mock } = setUp();
    mock(DeliveryRouting).homeSession.mockResolvedValue('home');
    repo.deliver
      .mockResolvedValueOnce({ outcome: 'reset' } as never)
      .mockResolvedValueOnce({ outcome: 'stored' } as never);
    expect(await sut.deliver(delivery)).toEqual({ session_id: 'home', duplicate: false });
    expect(submit.wake).toHaveBeenCalledWith('home');
  });

  it('gives up with a conflict when the home conversation keeps being reset', async () => {
    const { sut, repo, mock } = setUp();
    mock(DeliveryRouting).homeSession.mockResolvedValue('home');
    repo.deliver.mockResolvedValue({ outcome: 'reset' } as never);
    await expect(sut.deliver(delivery)).rejects.toMatchObject({ body: { code: 'conflict' } });
    expect(repo.deliver).toHaveBeenCalledTimes(3);
  });

  it('does not wake a session for a duplicate delivery', async () => {
    const { sut, repo, submit, mock } = setUp();
    mock(SessionsRepository).active.mockResolvedValue({ id: 'active' } as never);
    repo.deliver.mockResolvedValue({ outcome: 'duplicate' } as never);
    expect(await sut.deliver({ ...delivery, sessionId: undefined, source: 'web' })).toEqual({
      session_id: 'active',
      duplicate: true,
    });
    expect(mock(SessionsRepository).active).toHaveBeenCalledWith({ userId: 'u1', source: 'web' });
    expect(submit.wake).not.toHaveBeenCalled();
  });
});
