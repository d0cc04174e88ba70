/**
 * The gateway's side of the budgets (the session worker's): a user id an admin sends is checked
 * against the users before any call (an unknown one is a 404 and nothing is asked), a user reads
 * only their own budget, and the near-a-limit list gets the users' emails.
 */
import type { Bus } from '@skald/messaging/bus-port';
import type { UsersRepository } from '../auth/users.repository';
import { ApiError } from '../http/api-error';
import { BudgetsService } from './budgets.service';

const U1 = 'a0000000-0000-4000-8000-000000000001';
const U2 = 'a0000000-0000-4000-8000-000000000002';
const ADMIN = { userId: 'a0000000-0000-4000-8000-0000000000ad', role: 'admin' as const };
const status = (userId: string) => ({ user_id: userId, user_limits: null, limits: [] });

function setUp(known: string[]) {
  const call = jest.fn((subject: string, req: { user_id?: string }) =>
    Promise.resolve(subject === 'budgets.near' ? { items: [status(U1), status(U2)] } : status(req.user_id!)),
  );
  const users = {
    findByIds: (ids: string[]) =>
      Promise.resolve(ids.filter((i) => known.includes(i)).map((id) => ({ id, email: `${id.slice(-1)}@skald.test` }))),
  };
  const svc = new BudgetsService({ call } as unknown as Bus, users as unknown as UsersRepository);
  return { svc, call };
}

describe('BudgetsService (gateway)', () => {
  it('refuses an unknown user with 404 before asking the worker', async () => {
    const { svc, call } = setUp([U1]);
    await expect(svc.setUser(ADMIN, U2, null)).rejects.toBeInstanceOf(ApiError);
    await expect(svc.ofUser(ADMIN, U2)).rejects.toMatchObject({ status: 404 });
    expect(call).not.toHaveBeenCalled();
    await svc.setUser(ADMIN, U1, {
      tokens_per_day: 5,
      tokens_per_month: null,
      cost_usd_per_day: null,
      cost_usd_per_month: null,
    });
    expect(call).toHaveBeenCalledWith('budgets.set_user', expect.objectContaining({ actor: ADMIN, user_id: U1 }));
  });

  it("asks for the caller's own budget only", async () => {
    const { svc, call } = setUp([U1]);
    await svc.mine({ userId: U2, role: 'user' });
    expect(call).toHaveBeenCalledWith('budgets.status', { actor: { userId: U2, role: 'user' }, user_id: U2 });
  });

  it('names the users of the near-a-limit list (null for a user that no longer exists)', async () => {
    const { svc } = setUp([U1]);
    const { items } = await svc.near(ADMIN, 80);
    expect(items.map((i) => i.email)).toEqual(['1@skald.test', null]);
  });
});
