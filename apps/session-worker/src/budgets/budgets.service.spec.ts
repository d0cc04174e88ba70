/**
 * The session worker's BudgetsService with a faked repository: a user without any limit is admitted
 * without touching the database; a limited user's call is admitted with a hold, refused with the
 * sentence naming the limit, or (calls in flight near a limit) asks again until they end; only an
 * admin sets limits or lists who is near one, and a user reads only their own budget.
 */
import { expect } from '@jest/globals';
import { NO_BUDGET_LIMITS } from '@skald/contracts';
import type { Logger } from '@skald/service-kit';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { WorkerConfig } from '../config';
import type { Admission, Limit } from './budget-rules';
import type { BudgetSnapshot, BudgetsRepository } from './budgets.repository';
import { BudgetsService } from './budgets.service';

const quiet = { info: jest.fn(), warn: jest.fn() } as unknown as Logger;
const ADMIN = { userId: 'a0000000-0000-4000-8000-0000000000ad', role: 'admin' as const };
const U1 = 'a0000000-0000-4000-8000-000000000001';
const snapshot: BudgetSnapshot = {
  used: { tokensDay: 900, tokensMonth: 900, costDay: 0, costMonth: 0 },
  held: { inFlight: 0, settledTokens: 0, settledCost: 0 },
  largest: { tokens: 100, costUsd: 0 },
  now: new Date('2026-12-07T18:48:00.000Z'),
};

function setUp(dailyTokens = 0) {
  const repo = {
    ownerBudget: jest.fn(() => Promise.resolve({ user: { ...NO_BUDGET_LIMITS, tokens_per_day: 1000 }, groups: [] })),
    ownerBudgets: jest.fn(),
    used: jest.fn((ids: string[]) =>
      Promise.resolve(new Map(ids.map((id) => [id, { tokensDay: 850, tokensMonth: 850, costDay: 0, costMonth: 0 }]))),
    ),
    candidates: jest.fn(() => Promise.resolve([U1])),
    admit: jest.fn(
      (
        _u: string,
        decide: (s: BudgetSnapshot) => Admission,
      ): Promise<{ admission: Admission; holdId: string | null; snapshot: BudgetSnapshot }> =>
        Promise.resolve({ admission: decide(snapshot), holdId: 'h1', snapshot }),
    ),
    settle: jest.fn(() => Promise.resolve()),
    release: jest.fn(() => Promise.resolve()),
    setUserLimits: jest.fn(() => Promise.resolve()),
  };
  const svc = new BudgetsService(
    repo as unknown as BudgetsRepository,
    { SKALD_USER_DAILY_TOKENS: dailyTokens } as WorkerConfig,
    quiet,
  );
  return { svc, repo };
}

describe('BudgetsService admission', () => {
  it('admits a user without any limit without touching the database', async () => {
    const { svc, repo } = setUp();
    expect(await svc.admit(U1, { user: null, groups: [] })).toEqual({ kind: 'admitted', hold: null });
    expect(repo.admit).not.toHaveBeenCalled();
    expect(repo.ownerBudget).not.toHaveBeenCalled();
  });

  it('admits a limited user with a hold, and refuses past the limit naming it and its reset', async () => {
    const { svc, repo } = setUp();
    expect(await svc.admit(U1, null)).toEqual({ kind: 'admitted', hold: 'h1' });
    const over = { ...snapshot, used: { ...snapshot.used, tokensDay: 1000 } };
    repo.admit.mockImplementationOnce((_u, decide) =>
      Promise.resolve({ admission: decide(over), holdId: null, snapshot: over }),
    );
    expect(await svc.admit(U1, null)).toEqual({
      kind: 'refused',
      refusal: {
        code: 'exhausted',
        message:
          'Your daily token limit of 1,000 is used up: 1,000 tokens used today (UTC). It resets at 00:00 UTC on ' +
          '2026-12-08 (in 5 h 12 min); until then the agent cannot call a model for you.',
      },
    });
  });

  it('the deployment default applies to a user nobody gave a limit', async () => {
    const { svc, repo } = setUp(500);
    repo.admit.mockImplementationOnce((_u, decide) =>
      Promise.resolve({ admission: decide(snapshot), holdId: null, snapshot }),
    );
    const r = await svc.admit(U1, { user: null, groups: [] });
    expect(r).toMatchObject({
      kind: 'refused',
      refusal: { message: expect.stringMatching(/^The deployment's daily token limit of 500 /) },
    });
  });

  it('asks again while calls in flight may take the rest, and starts once they ended', async () => {
    const { svc, repo } = setUp();
    const busy = { ...snapshot, held: { inFlight: 1, settledTokens: 0, settledCost: 0 } };
    const wait: Limit = { dimension: 'tokens_per_day', limit: 1000, setBy: { kind: 'user' } };
    repo.admit.mockImplementationOnce(() =>
      Promise.resolve({ admission: { kind: 'wait', limit: wait, used: 900 }, holdId: null, snapshot: busy }),
    );
    expect(await svc.admit(U1, null)).toEqual({ kind: 'admitted', hold: 'h1' });
    expect(repo.admit).toHaveBeenCalledTimes(2);
  });

  it('never throws from settle or release', async () => {
    const { svc, repo } = setUp();
    repo.settle.mockRejectedValueOnce(new Error('db down'));
    repo.release.mockRejectedValueOnce(new Error('db down'));
    await expect(svc.settle(U1, 'h1', { tokens: 1, costUsd: null, messageId: null })).resolves.toBeUndefined();
    await expect(svc.release(U1, 'h1')).resolves.toBeUndefined();
  });
});

describe('BudgetsService views', () => {
  it('only an admin sets limits or lists who is near one; a user reads only their own budget', async () => {
    const { svc, repo } = setUp();
    const user = { userId: U1, role: 'user' as const };
    await expect(svc.setUser(user, U1, null)).rejects.toBeInstanceOf(RemoteError);
    await expect(svc.near(user, 80)).rejects.toMatchObject({ body: { code: 'forbidden' } });
    await expect(svc.status(user, ADMIN.userId)).rejects.toMatchObject({ body: { code: 'forbidden' } });
    expect(repo.setUserLimits).not.toHaveBeenCalled();
    const mine = await svc.status(user, U1);
    expect(mine.limits).toEqual([
      expect.objectContaining({ dimension: 'tokens_per_day', limit: 1000, used: 850, percent: 85, set_by: 'user' }),
    ]);
  });

  it('lists users at or past the threshold of any limit', async () => {
    const { svc, repo } = setUp();
    repo.ownerBudgets.mockResolvedValue(
      new Map([[U1, { user: { ...NO_BUDGET_LIMITS, tokens_per_day: 1000 }, groups: [] }]]),
    );
    expect((await svc.near(ADMIN, 80)).items.map((i) => i.user_id)).toEqual([U1]);
    expect((await svc.near(ADMIN, 90)).items).toEqual([]);
  });
});
