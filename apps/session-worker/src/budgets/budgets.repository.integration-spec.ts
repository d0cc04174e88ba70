import { randomUUID } from 'node:crypto';
import { expect } from '@jest/globals';
import { DataSource } from 'typeorm';
import type { Logger } from '@skald/service-kit';
import type { WorkerConfig } from '../config';
import { LlmUsageRepository } from '../llm/llm-usage.repository';
import type { Limits } from './budget-rules';
import { BudgetsRepository } from './budgets.repository';
import { BudgetsService } from './budgets.service';

jest.setTimeout(120_000);

const quiet = { info: () => {}, warn: () => {} } as unknown as Logger;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The admission over real Postgres, as two session workers run it: two connection pools, two
 * services, many calls of one user at once on each. Each admitted call takes a while, is written to
 * the ledger and settles its hold. The ledger ends within one call of the limit — the plain check
 * "used < limit" would let every call in flight through — and the budget is used, not refused early.
 */
describe('budget admission shared by two workers', () => {
  let a: DataSource;
  let b: DataSource;

  beforeAll(async () => {
    a = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 3 } });
    b = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 3 } });
    await Promise.all([a.initialize(), b.initialize()]);
  });

  afterAll(async () => {
    await Promise.all([a?.destroy(), b?.destroy()]);
  });

  function worker(ds: DataSource) {
    const repo = new BudgetsRepository(ds);
    const svc = new BudgetsService(repo, { SKALD_USER_DAILY_TOKENS: 0 } as WorkerConfig, quiet);
    const ledger = new LlmUsageRepository(ds);
    /** One model call of `tokens` tokens: admitted, answered after `ms`, written, settled. */
    const call = async (userId: string, tokens: number, ms: number): Promise<'answered' | 'refused'> => {
      const admitted = await svc.admit(userId, null);
      if (admitted.kind === 'refused') return 'refused';
      await sleep(ms);
      await ledger.record({
        userId,
        sessionId: null as unknown as string,
        frameId: null,
        messageId: null,
        purpose: 'compaction',
        client: 'sim',
        model: 'sim',
        inputTokens: tokens - 10,
        outputTokens: 10,
        cachedInputTokens: 0,
        estimated: false,
        costUsd: tokens / 1_000_000,
      });
      if (admitted.hold)
        await svc.settle(userId, admitted.hold, { tokens, costUsd: tokens / 1_000_000, messageId: null });
      return 'answered';
    };
    return { repo, svc, call };
  }

  const ledgerTokens = async (userId: string): Promise<number> =>
    Number(
      (
        await a.query<{ t: string }[]>(
          `SELECT COALESCE(SUM(input_tokens + output_tokens), 0) AS t FROM llm_usage WHERE user_id = $1`,
          [userId],
        )
      )[0].t,
    );

  it.each<[string, Partial<Limits>, number]>([
    ['a daily token limit', { tokens_per_day: 20_500 }, 20_500],
    ['a monthly cost limit', { cost_usd_per_month: 0.0205 }, 20_500],
  ])('%s: 2 workers × 15 concurrent calls overrun it by at most one call', async (_name, limits, limitTokens) => {
    const user = randomUUID();
    const w1 = worker(a);
    const w2 = worker(b);
    await w1.repo.setUserLimits(user, {
      tokens_per_day: null,
      tokens_per_month: null,
      cost_usd_per_day: null,
      cost_usd_per_month: null,
      ...limits,
    });
    const CALL = 1_000;
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? w1 : w2).call(user, CALL, 5 + ((i * 7) % 40))),
    );
    const used = await ledgerTokens(user);
    const answered = results.filter((r) => r === 'answered').length;
    // The figures of the run, for the report.
    console.log(
      `budget race (${_name}): ${answered} answered, ${results.length - answered} refused, ` +
        `ledger ${used} tokens for a limit of ${limitTokens} (overrun ${used - limitTokens}), ${Date.now() - started} ms`,
    );
    expect(used).toBeLessThanOrEqual(limitTokens + CALL);
    // The budget is used, not refused early: no call was refused while one more fitted.
    expect(used).toBeGreaterThanOrEqual(limitTokens);
    expect(answered).toBe(used / CALL);
    // Nothing is held afterwards.
    expect(await a.query(`SELECT 1 FROM llm_budget_holds WHERE user_id = $1`, [user])).toHaveLength(0);
    // The next call is refused, naming the limit.
    const refused = await w2.svc.admit(user, null);
    expect(refused).toMatchObject({
      kind: 'refused',
      refusal: {
        code: 'exhausted',
        message: expect.stringMatching(
          /^Your (daily token|monthly cost) limit of .* is used up: .* resets at 00:00 UTC on \d{4}-\d\d-\d\d /,
        ),
      },
    });
  });

  it('a hold left by a worker that died frees the user when it expires; a user without limits touches nothing', async () => {
    const user = randomUUID();
    const w = worker(a);
    await w.repo.setUserLimits(user, {
      tokens_per_day: 1_000_000,
      tokens_per_month: null,
      cost_usd_per_day: null,
      cost_usd_per_month: null,
    });
    const dead = await w.svc.admit(user, null);
    expect(dead).toMatchObject({ kind: 'admitted', hold: expect.any(String) });
    // No call of this user seen yet: the next one waits for the one in flight (bounded), so expire it now.
    await a.query(`UPDATE llm_budget_holds SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [user]);
    expect(await w.svc.admit(user, null)).toMatchObject({ kind: 'admitted', hold: expect.any(String) });
    expect(await a.query(`SELECT 1 FROM llm_budget_holds WHERE user_id = $1`, [user])).toHaveLength(1);

    const free = randomUUID();
    expect(await w.svc.admit(free, { user: null, groups: [] })).toEqual({ kind: 'admitted', hold: null });
    expect(await w.svc.admit(free, null)).toEqual({ kind: 'admitted', hold: null });
    expect(await a.query(`SELECT 1 FROM llm_budget_users WHERE user_id = $1`, [free])).toHaveLength(0);
  });

  it("a group's budget and an admin's limits for the user: the admin's replace the group's", async () => {
    const user = randomUUID();
    const w = worker(a);
    const group = randomUUID();
    await a.query(`INSERT INTO groups (id, name, source, budget_cost_day_usd) VALUES ($1, $2, 'admin', 5)`, [
      group,
      `Interns ${group.slice(0, 8)}`,
    ]);
    await a.query(`INSERT INTO group_members (group_id, user_id, source) VALUES ($1, $2, 'admin')`, [group, user]);
    const owner = await w.repo.ownerBudget(user);
    expect(w.svc.limitsOf(owner)).toEqual([
      { dimension: 'cost_usd_per_day', limit: 5, setBy: { kind: 'group', name: `Interns ${group.slice(0, 8)}` } },
    ]);
    await w.repo.setUserLimits(user, {
      tokens_per_day: null,
      tokens_per_month: 2_000_000,
      cost_usd_per_day: null,
      cost_usd_per_month: null,
    });
    expect(w.svc.limitsOf(await w.repo.ownerBudget(user))).toEqual([
      { dimension: 'tokens_per_month', limit: 2_000_000, setBy: { kind: 'user' } },
    ]);
    await w.repo.setUserLimits(user, null);
    expect(w.svc.limitsOf(await w.repo.ownerBudget(user))[0].setBy.kind).toBe('group');
    await a.query(`DELETE FROM groups WHERE id = $1`, [group]);
  });
});
