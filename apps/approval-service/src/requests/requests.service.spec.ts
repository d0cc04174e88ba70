/**
 * RequestsService with faked repositories and publisher: how a human answer is taken — the first
 * answer wins and a second is a conflict naming what happened, a question is answered and an
 * approval approved (not the other way round), "approve for this session" opens the bypass in the
 * same transaction, and the session is woken only after the answer is stored.
 */
import { Actor, ParsedRequestOf } from '@skald/contracts';
import type { Logger } from '@skald/service-kit';
import { fake, newTestService } from '@skald/testing/unit';
import { AuditRepository } from '../audit/audit.repository';
import { BypassesRepository } from '../bypasses/bypasses.repository';
import { BypassesService } from '../bypasses/bypasses.service';
import { APPROVAL_LOGGER } from '../config';
import { ApprovalEventsPublisher } from '../events/approval-events.publisher';
import { RequestsRepository, StoredRequest } from './requests.repository';
import { RequestsService } from './requests.service';

const log = { debug: jest.fn(), info: jest.fn(), warn: jest.fn(), error: jest.fn(), child: () => log };
const owner: Actor = { userId: 'u1', role: 'user' };

const request = (over: Partial<StoredRequest> = {}): StoredRequest => ({
  id: 'q1',
  kind: 'approval',
  toolCallId: 'c1',
  sessionId: 's1',
  userId: 'u1',
  source: 'web',
  toolName: 'execute_cmd',
  arguments: JSON.stringify({ command: 'ls -la' }),
  preview: null,
  question: null,
  landsAt: null,
  status: 'pending',
  note: null,
  answer: null,
  actorUserId: null,
  channel: null,
  bypass: null,
  cancelReason: null,
  turnId: 't1',
  createdAt: new Date(),
  resolvedAt: null,
  ...over,
});

const resolve = (over: Partial<ParsedRequestOf<'approval.resolve'>>) =>
  ({ actor: owner, request_id: 'q1', action: 'approve', ...over }) as ParsedRequestOf<'approval.resolve'>;

function setUp(row: StoredRequest = request()) {
  const t = newTestService(RequestsService, [fake(APPROVAL_LOGGER, log as unknown as Logger)]);
  const repo = t.mock(RequestsRepository);
  const order: string[] = [];
  repo.findById.mockResolvedValue(row);
  repo.transaction.mockImplementation(async (work) => {
    const out = await work({} as never);
    order.push('commit');
    return out;
  });
  repo.resolvePending.mockImplementation(async (_db, r) => ({
    ...row,
    status: r.status,
    note: r.note,
    answer: r.answer,
  }));
  const events = t.mock(ApprovalEventsPublisher);
  events.wake.mockImplementation(() => void order.push('wake'));
  return { ...t, repo, events, order, bypasses: t.mock(BypassesRepository), audit: t.mock(AuditRepository) };
}

describe('RequestsService.resolve', () => {
  it('approves a pending request: audited and stored in one transaction, then the session woken', async () => {
    const { sut, audit, events, order } = setUp();
    expect(await sut.resolve(resolve({}))).toMatchObject({ request_id: 'q1', status: 'approved' });
    expect(audit.insert).toHaveBeenCalledWith(
      [expect.objectContaining({ requestId: 'q1', decision: 'approve', by: 'human', actorUserId: 'u1' })],
      expect.anything(),
    );
    expect(order).toEqual(['commit', 'wake']);
    expect(events.resolved).toHaveBeenCalledWith(expect.objectContaining({ status: 'approved' }));
  });

  it('turns a second answer away as a conflict that says what happened', async () => {
    const { sut, repo, events } = setUp(request({ status: 'rejected' }));
    await expect(sut.resolve(resolve({}))).rejects.toThrow('the request was already rejected');
    const cancelled = setUp(request({ status: 'cancelled' }));
    await expect(cancelled.sut.resolve(resolve({}))).rejects.toThrow('the request was cancelled');
    expect(repo.transaction).not.toHaveBeenCalled();
    expect(events.wake).not.toHaveBeenCalled();
  });

  it('loses a race to another answer as a conflict, after the transaction found nothing pending', async () => {
    const { sut, repo, events } = setUp();
    repo.resolvePending.mockResolvedValue(null);
    repo.findById.mockResolvedValueOnce(request()).mockResolvedValueOnce(request({ status: 'approved' }));
    await expect(sut.resolve(resolve({ action: 'reject' }))).rejects.toThrow('the request was already approved');
    expect(events.wake).not.toHaveBeenCalled();
  });

  it('answers a question, and refuses to approve one or to answer an approval', async () => {
    const question = request({
      kind: 'clarification',
      question: { title: 'Which?', question: 'Which file?', suggested_answers: [] },
    });
    await expect(setUp(question).sut.resolve(resolve({ action: 'approve' }))).rejects.toMatchObject({
      body: { code: 'invalid_input', field: 'action' },
    });
    await expect(setUp().sut.resolve(resolve({ action: 'answer', answer: 'x' }))).rejects.toMatchObject({
      body: { code: 'invalid_input', field: 'action' },
    });
    expect(await setUp(question).sut.resolve(resolve({ action: 'answer', answer: 'a.txt' }))).toMatchObject({
      status: 'answered',
      answer: 'a.txt',
    });
  });

  it("opens a session bypass for the approved command when asked, and tells the gate's replicas", async () => {
    const { sut, bypasses, mock } = setUp();
    await sut.resolve(resolve({ bypass_scope: 'all', bypass_secs: 600 }));
    expect(bypasses.create).toHaveBeenCalledWith(
      expect.objectContaining({ sessionId: 's1', userId: 'u1', createdBy: 'u1', scope: 'all', secs: 600 }),
      expect.anything(),
    );
    expect(mock(BypassesService).opened).toHaveBeenCalledWith('s1');
  });

  it('answers not_found for a request of another user (the repository is asked within the owner)', async () => {
    const { sut, repo } = setUp();
    repo.findById.mockResolvedValue(null);
    await expect(sut.resolve(resolve({}))).rejects.toMatchObject({ body: { code: 'not_found' } });
    expect(repo.findById).toHaveBeenCalledWith({ userId: 'u1' }, 'q1');
  });
});

describe('RequestsService.register and inbox', () => {
  it('refuses a clarification without its question', async () => {
    const { sut, repo } = setUp();
    const req = { kind: 'clarification', request_id: 'q2', actor: owner } as ParsedRequestOf<'approval.register'>;
    await expect(sut.register(req)).rejects.toMatchObject({ body: { code: 'invalid_input', field: 'question' } });
    expect(repo.insertOrGet).not.toHaveBeenCalled();
  });

  it('shows approvals with their parsed arguments and questions with their title', async () => {
    const { sut, repo } = setUp();
    repo.pendingOfUser.mockResolvedValue([
      request(),
      request({ id: 'q2', kind: 'clarification', question: { title: 'T', question: 'Q?', suggested_answers: ['a'] } }),
    ]);
    const inbox = await sut.inbox(owner);
    expect(inbox.approvals).toEqual([
      expect.objectContaining({ request_id: 'q1', tool_name: 'execute_cmd', arguments: { command: 'ls -la' } }),
    ]);
    expect(inbox.clarifications).toEqual([
      expect.objectContaining({ request_id: 'q2', title: 'T', question: 'Q?', suggested_answers: ['a'] }),
    ]);
  });
});
