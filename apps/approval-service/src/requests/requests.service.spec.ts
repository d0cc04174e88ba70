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
import { RuleRow } from '../rules/gate-input';
import { RuleSet } from '../rules/rule-set';
import { RulesService } from '../rules/rules.service';
import { initShellParser } from '../rules/shell-analysis';
import { RequestsRepository, StoredRequest } from './requests.repository';
import { RequestsService } from './requests.service';
import { storedRequest } from '../testing-fixtures/stored-request';

const log = { debug: jest.fn(), info: jest.fn(), warn: jest.fn(), error: jest.fn(), child: () => log };
const owner: Actor = { userId: 'u1', role: 'user' };

const request = storedRequest;

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
    actorUserId: r.actorUserId,
    editedArguments: r.edit?.arguments ?? null,
    editDiff: r.edit?.diff ?? null,
  }));
  t.mock(RulesService).ruleSet.mockResolvedValue(RULES);
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

const rule = (n: number, toolPattern: string, commandPattern: string | null, action: string): RuleRow => ({
  id: `00000000-0000-4000-9000-00000000000${n}`,
  toolPattern,
  pathPattern: null,
  commandPattern,
  agentId: null,
  source: null,
  securityGroup: null,
  action,
  priority: n,
  ord: n,
  name: `rule ${n}`,
});
const RULES = new RuleSet([
  rule(1, 'execute_cmd', 'rm -rf *', 'deny'),
  rule(2, 'execute_cmd', 'ls *', 'allow'),
  rule(9, '*', null, 'require'),
]);

describe('RequestsService.resolve with edited arguments', () => {
  beforeAll(() => initShellParser(), 30_000);

  it('approves the edited call: stored with its diff, audited with both digests, announced with the edit', async () => {
    const { sut, repo, audit, events } = setUp();
    const state = await sut.resolve(resolve({ arguments: { command: 'ls -la src' } }));
    expect(state).toMatchObject({ status: 'approved', edit: { arguments: { command: 'ls -la src' } } });
    expect(state.edit?.diff).toContain('-ls -la\n+ls -la src');
    const stored = repo.resolvePending.mock.calls[0]?.[1];
    expect(stored?.status).toBe('approved');
    expect(stored?.edit?.arguments).toBe('{"command":"ls -la src"}');
    const [[entries]] = audit.insert.mock.calls;
    expect(entries[0]).toMatchObject({ by: 'human', decision: 'approve', actorUserId: 'u1' });
    expect(entries[0]?.argsDigest).not.toBe(entries[0]?.edit?.argsDigest);
    expect(entries[0]?.edit?.diff).toContain('+ls -la src');
    expect(events.resolved.mock.calls[0]?.[0].edit?.arguments).toEqual({ command: 'ls -la src' });
  });

  it('refuses an edit the gate denies, naming the command, the rule and its note; nothing is stored', async () => {
    const { sut, repo, events, mock } = setUp();
    mock(RulesService).list.mockResolvedValue([
      { id: '00000000-0000-4000-9000-000000000001', note: 'no recursive deletes' } as never,
    ]);
    await expect(sut.resolve(resolve({ arguments: { command: 'cd /tmp && rm -rf x' } }))).rejects.toMatchObject({
      body: {
        code: 'forbidden',
        message: 'the edited call is denied: rm -rf x: rule “rule 1” (deny, priority 1) (no recursive deletes)',
      },
    });
    expect(repo.transaction).not.toHaveBeenCalled();
    expect(events.wake).not.toHaveBeenCalled();
  });

  it("refuses arguments the tool's schema refuses, and arguments the tool does not have", async () => {
    const { sut, repo } = setUp();
    await expect(sut.resolve(resolve({ arguments: { command: '' } }))).rejects.toMatchObject({
      body: { code: 'invalid_input', field: 'arguments.command' },
    });
    const unknownArg = sut.resolve(resolve({ arguments: { command: 'ls', sandbox: false } }));
    await expect(unknownArg).rejects.toMatchObject({ body: { code: 'invalid_input' } });
    await expect(unknownArg).rejects.toThrow('"sandbox"');
    expect(repo.transaction).not.toHaveBeenCalled();
  });

  it('refuses an edit with a session approval, of a rejection, of an MCP call, or of a request without its context', async () => {
    await expect(
      setUp().sut.resolve(resolve({ arguments: { command: 'ls' }, bypass_scope: 'call' })),
    ).rejects.toMatchObject({ body: { code: 'invalid_input', field: 'bypass_scope' } });
    await expect(
      setUp().sut.resolve(resolve({ action: 'reject', arguments: { command: 'ls' } })),
    ).rejects.toMatchObject({
      body: { code: 'invalid_input', field: 'arguments' },
    });
    await expect(
      setUp(request({ toolName: 'mcp__gh__create_issue', arguments: '{}' })).sut.resolve(
        resolve({ arguments: { a: 1 } }),
      ),
    ).rejects.toMatchObject({ body: { code: 'invalid_input' } });
    const old = setUp(request({ gateContext: null })).sut.resolve(resolve({ arguments: { command: 'ls' } }));
    await expect(old).rejects.toMatchObject({ body: { code: 'invalid_input' } });
    await expect(old).rejects.toThrow('before edits');
  });

  it('answers a retry of the same edit by the same person with the state; another edit afterwards is a conflict', async () => {
    const done = request({
      status: 'approved',
      actorUserId: 'u1',
      editedArguments: '{"command":"ls -la src"}',
      editDiff: 'd',
    });
    const { sut, repo } = setUp(done);
    expect(await sut.resolve(resolve({ arguments: { command: 'ls -la src' } }))).toMatchObject({ status: 'approved' });
    await expect(sut.resolve(resolve({ arguments: { command: 'ls' } }))).rejects.toMatchObject({
      body: { code: 'conflict' },
    });
    expect(repo.transaction).not.toHaveBeenCalled();
  });

  it('an edit that changes nothing is a plain approval', async () => {
    const { sut, repo } = setUp();
    const state = await sut.resolve(resolve({ arguments: { command: 'ls -la' } }));
    expect(state.edit).toBeUndefined();
    expect(repo.resolvePending).toHaveBeenCalledWith(expect.anything(), expect.objectContaining({ edit: null }));
  });
});

describe('RequestsService.register and inbox', () => {
  it('refuses a clarification without its question', async () => {
    const { sut, repo } = setUp();
    const req = { kind: 'clarification', request_id: 'q2', actor: owner } as ParsedRequestOf<'approval.register'>;
    await expect(sut.register(req)).rejects.toMatchObject({ body: { code: 'invalid_input', field: 'question' } });
    expect(repo.insertOrGet).not.toHaveBeenCalled();
  });

  it('shows approvals with their parsed arguments and the rule that asked, questions with their title', async () => {
    const { sut, repo, audit } = setUp();
    repo.pendingOfUser.mockResolvedValue([
      request(),
      request({ id: 'q3', toolCallId: 'c3' }),
      request({ id: 'q2', kind: 'clarification', question: { title: 'T', question: 'Q?', suggested_answers: ['a'] } }),
    ]);
    audit.askingRules.mockResolvedValue(
      new Map([
        [
          request().toolCallId,
          {
            ruleId: 'r1',
            ruleName: 'ask before any command',
          },
        ],
        ['c3', { ruleId: 'r9', ruleName: null }],
      ]),
    );
    const inbox = await sut.inbox(owner);
    expect(audit.askingRules).toHaveBeenCalledTimes(1);
    expect(inbox.approvals).toEqual([
      expect.objectContaining({
        request_id: 'q1',
        tool_name: 'execute_cmd',
        arguments: { command: 'ls -la' },
        rule: { id: 'r1', name: 'ask before any command' },
      }),
      expect.objectContaining({ request_id: 'q3', rule: { id: 'r9', name: 'a deleted rule' } }),
    ]);
    expect(inbox.clarifications).toEqual([
      expect.objectContaining({ request_id: 'q2', title: 'T', question: 'Q?', suggested_answers: ['a'] }),
    ]);
  });
});
