/**
 * SessionsService's admin reads (`session.admin.get`, `session.admin.messages`) with faked
 * repositories: only an admin reads another user's conversation; anyone else is refused before a
 * row is read; the history page is the one its owner reads, approvals included.
 */
import fc from 'fast-check';
import { Actor } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { fake, newTestService } from '@skald/testing/unit';
import { SessionsRepository, type SessionListRow } from './sessions.repository';
import { SessionsService } from './sessions.service';
import { sessionRow } from '../testing-fixtures/session-row';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const admin: Actor = { userId: 'a0000000-0000-4000-8000-000000000001', role: 'admin' };
const OWNER = 'b0000000-0000-4000-8000-000000000002';
const SID = 'c0000000-0000-4000-8000-000000000003';

function setUp(found: boolean) {
  const call = jest.fn().mockResolvedValue({ items: [] });
  const t = newTestService(SessionsService, [fake(Bus, { call })]);
  const repo = t.mock(SessionsRepository);
  const row: SessionListRow = {
    ...sessionRow({ id: SID, user_id: OWNER, title: 'Deploy plan' }),
    message_count: 3,
    last_message_at: new Date('2026-01-02T00:00:00Z'),
  };
  repo.findForAdmin.mockResolvedValue(found ? row : null);
  repo.chatPage.mockResolvedValue({
    rows: [],
    calls: [{ id: 't1', request_id: 'r1', message_id: 'm1' }] as never,
    hasMore: false,
    resumeSeq: 7,
  });
  return { sut: t.sut, repo, bus: { call } };
}

describe('SessionsService admin reads', () => {
  it(`refuses every non-admin actor with forbidden before reading a row (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.uuid(), fc.uuid(), fc.option(fc.uuid(), { nil: undefined }), async (userId, sid, before) => {
        const { sut, repo } = setUp(true);
        const user: Actor = { userId, role: 'user' };
        await expect(sut.adminSummary(user, sid)).rejects.toMatchObject({ body: { code: 'forbidden' } });
        await expect(sut.adminMessages(user, sid, before, 50)).rejects.toMatchObject({ body: { code: 'forbidden' } });
        expect(repo.findForAdmin).not.toHaveBeenCalled();
        expect(repo.chatPage).not.toHaveBeenCalled();
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('answers not_found to an admin for a session that does not exist', async () => {
    const { sut, repo } = setUp(false);
    await expect(sut.adminSummary(admin, SID)).rejects.toMatchObject({ body: { code: 'not_found' } });
    await expect(sut.adminMessages(admin, SID, undefined, 50)).rejects.toMatchObject({ body: { code: 'not_found' } });
    expect(repo.chatPage).not.toHaveBeenCalled();
  });

  it("gives an admin another user's summary naming its owner", async () => {
    const { sut, repo } = setUp(true);
    const s = await sut.adminSummary(admin, SID);
    expect(s).toMatchObject({ id: SID, user_id: OWNER, title: 'Deploy plan', message_count: 3 });
    expect(repo.findForAdmin).toHaveBeenCalledWith({ role: 'admin', sessionId: SID });
  });

  it("reads the owner's page of that session, the approvals asked as the admin", async () => {
    const { sut, repo, bus } = setUp(true);
    const page = await sut.adminMessages(admin, SID, undefined, 20);
    expect(page).toMatchObject({ items: [], has_more: false, session_id: SID, resume_seq: 7 });
    expect(repo.chatPage).toHaveBeenCalledWith({ userId: OWNER, sessionId: SID, before: undefined, limit: 20 });
    expect(bus.call).toHaveBeenCalledWith('approval.decisions', {
      actor: admin,
      session_id: SID,
      tool_call_ids: ['t1'],
    });
  });
});
