/**
 * AdminSessionsService with fakes: the setting that turns admins' reads off, the record of each
 * read of another user's conversation written before the answer leaves (none for the admin's own),
 * and no answer when the record cannot be written.
 */
import fc from 'fast-check';
import type { Actor } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { fake, newTestService } from '@skald/testing/unit';
import { UsersRepository } from '../auth/users.repository';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import { GATEWAY_LOGGER } from '../tokens';
import { AdminSessionReadsRepository } from './admin-session-reads.repository';
import { ADMIN_CHAT_ACCESS_OFF, AdminSessionsService } from './admin-sessions.service';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const admin: Actor = { userId: 'a0000000-0000-4000-8000-000000000001', role: 'admin' };
const OWNER = 'b0000000-0000-4000-8000-000000000002';
const SID = 'c0000000-0000-4000-8000-000000000003';
const at = '2026-01-01T00:00:00.000Z';
const summary = {
  id: SID,
  source: 'web',
  agent_id: 'main',
  is_ephemeral: false,
  is_interactive: true,
  created_at: at,
  message_count: 2,
  last_message_at: at,
  title: 'Deploy plan',
  is_active: true,
  client: null,
};
const page = { items: [], has_more: false, session_id: SID, resume_seq: 4 };
const silent = { info: () => undefined, child: () => silent } as unknown;

function setUp(access: 'on' | 'off', owner = OWNER) {
  const order: string[] = [];
  const call = jest.fn(async (subject: string) => {
    order.push(subject);
    return subject === 'session.admin.get' ? { ...summary, user_id: owner } : page;
  });
  const t = newTestService(AdminSessionsService, [
    fake(Bus, { call: call as never }),
    fake(GATEWAY_CONFIG, { SKALD_ADMIN_CHAT_ACCESS: access } as GatewayConfig),
    fake(GATEWAY_LOGGER, silent),
  ]);
  const users = t.mock(UsersRepository);
  users.findByIds.mockResolvedValue([{ id: owner, email: 'ann@skald.test' }] as never);
  const reads = t.mock(AdminSessionReadsRepository);
  reads.record.mockImplementation(async () => {
    order.push('record');
  });
  return { sut: t.sut, bus: { call }, reads, users, order };
}

describe('AdminSessionsService', () => {
  it(`with SKALD_ADMIN_CHAT_ACCESS=off refuses every read with 403 before asking anything (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.uuid(), fc.option(fc.uuid(), { nil: undefined }), async (sid, before) => {
        const { sut, bus, reads } = setUp('off');
        await expect(sut.summary(admin, sid)).rejects.toMatchObject({
          status: 403,
          code: 'forbidden',
          message: ADMIN_CHAT_ACCESS_OFF,
        });
        await expect(sut.messages(admin, sid, before, 50)).rejects.toMatchObject({ status: 403 });
        expect(bus.call).not.toHaveBeenCalled();
        expect(reads.record).not.toHaveBeenCalled();
      }),
      { seed: SEED, numRuns: 200 },
    );
  });

  it("records an admin's read of another user's conversation before answering, naming its owner", async () => {
    const { sut, reads, order } = setUp('on');
    const s = await sut.summary(admin, SID);
    expect(s).toEqual({ ...summary, owner: { id: OWNER, email: 'ann@skald.test' } });
    expect(s).not.toHaveProperty('user_id');
    expect(reads.record).toHaveBeenCalledWith({
      adminUserId: admin.userId,
      ownerUserId: OWNER,
      sessionId: SID,
      read: 'session',
    });
    expect(order).toEqual(['session.admin.get', 'record']);
  });

  it('records each history page read, and answers the page the worker gave', async () => {
    const { sut, reads, bus } = setUp('on');
    expect(await sut.messages(admin, SID, undefined, 20)).toEqual(page);
    expect(bus.call).toHaveBeenCalledWith('session.admin.messages', {
      actor: admin,
      session_id: SID,
      before: undefined,
      limit: 20,
    });
    expect(reads.record).toHaveBeenCalledWith(expect.objectContaining({ read: 'messages', ownerUserId: OWNER }));
  });

  it('sends nothing when the record cannot be written', async () => {
    const { sut, reads } = setUp('on');
    reads.record.mockRejectedValue(new Error('db down'));
    await expect(sut.summary(admin, SID)).rejects.toThrow('db down');
    await expect(sut.messages(admin, SID, undefined, 50)).rejects.toThrow('db down');
  });

  it("does not record an admin's read of their own conversation", async () => {
    const { sut, reads } = setUp('on', admin.userId);
    await sut.summary(admin, SID);
    await sut.messages(admin, SID, undefined, 50);
    expect(reads.record).not.toHaveBeenCalled();
  });

  it('names no e-mail for an owner whose account is gone', async () => {
    const { sut, users } = setUp('on');
    users.findByIds.mockResolvedValue([]);
    expect((await sut.summary(admin, SID)).owner).toEqual({ id: OWNER, email: null });
  });
});
