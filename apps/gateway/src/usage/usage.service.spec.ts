/**
 * UsageService with fakes: which user each report asks the worker about (the caller's own, the
 * named user's after checking they exist, or everyone's with the top users), and the e-mails it
 * puts on the top users (null for an account that is gone).
 */
import fc from 'fast-check';
import type { Actor, UsageReport } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { fake, newTestService } from '@skald/testing/unit';
import { UsersRepository } from '../auth/users.repository';
import { UsageService } from './usage.service';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const user: Actor = { userId: 'a0000000-0000-4000-8000-000000000001', role: 'user' };
const admin: Actor = { userId: 'a0000000-0000-4000-8000-000000000002', role: 'admin' };
const FROM = '2026-11-01';
const UNTIL = '2026-12-01';

function setUp(known: Array<{ id: string; email: string }>, topUsers: string[] = []) {
  const call = jest.fn(
    async () => ({ top_users: topUsers.map((user_id) => ({ user_id, tokens: 1, cost: 0 })) }) as unknown as UsageReport,
  );
  const t = newTestService(UsageService, [fake(Bus, { call: call as never })]);
  const users = t.mock(UsersRepository);
  users.findByIds.mockImplementation(
    async (ids: readonly string[]) => known.filter((u) => ids.includes(u.id)) as never,
  );
  return { sut: t.sut, call };
}

describe('UsageService', () => {
  it("asks for the caller's own usage, never another user's", async () => {
    const { sut, call } = setUp([]);
    await sut.mine(user, FROM, UNTIL);
    expect(call).toHaveBeenCalledWith('usage.report', {
      actor: user,
      user_id: user.userId,
      from: FROM,
      until: UNTIL,
      top: 0,
    });
  });

  it(`a named user who does not exist is a 404 before the worker is asked (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.uuid(), async (id) => {
        const { sut, call } = setUp([{ id: 'b0000000-0000-4000-8000-000000000009', email: 'x@skald.test' }]);
        await expect(sut.ofUser(admin, id, FROM, UNTIL)).rejects.toMatchObject({ code: 'not_found' });
        expect(call).not.toHaveBeenCalled();
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('names the top users by e-mail, null for an account that is gone', async () => {
    const kept = 'b0000000-0000-4000-8000-000000000001';
    const gone = 'b0000000-0000-4000-8000-000000000002';
    const { sut, call } = setUp([{ id: kept, email: 'kept@skald.test' }], [kept, gone]);
    const r = await sut.overview(admin, FROM, UNTIL, 10);
    expect(call).toHaveBeenCalledWith('usage.report', {
      actor: admin,
      user_id: null,
      from: FROM,
      until: UNTIL,
      top: 10,
    });
    expect(r.top_users.map((u) => [u.user_id, u.email])).toEqual([
      [kept, 'kept@skald.test'],
      [gone, null],
    ]);
  });
});
