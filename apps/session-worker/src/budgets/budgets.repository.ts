import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { LlmBudgetUsersRow, LlmUserBudgetsRow } from '@skald/persistence';
import { Database } from '@skald/persistence/database';
import { queryRows } from '@skald/persistence/query-rows';
import type { Admission, CallSize, Held, Limits, OwnerBudget, Used } from './budget-rules';

/** What an admission reads under the user's lock. */
export interface BudgetSnapshot {
  used: Used;
  held: Held;
  largest: CallSize;
  /** The database's clock. */
  now: Date;
}

/** The most users the near-a-limit view weighs (the most active first). */
export const BUDGET_CANDIDATES_MAX = 10_000;

const num = (v: string | number | null | undefined): number | null =>
  v === null || v === undefined ? null : Number(v);

type LimitColumns = Pick<LlmUserBudgetsRow, 'tokens_day' | 'tokens_month' | 'cost_day_usd' | 'cost_month_usd'>;

/** A row's four limit columns as limits (the same columns on `groups` are read under these names). */
export function limitsOfRow(r: LimitColumns): Limits {
  return {
    tokens_per_day: num(r.tokens_day),
    tokens_per_month: num(r.tokens_month),
    cost_usd_per_day: num(r.cost_day_usd),
    cost_usd_per_month: num(r.cost_month_usd),
  };
}

/** `groups`' budget columns under the names of `llm_user_budgets`' (one mapper for both). */
export const GROUP_LIMIT_COLUMNS = `g.budget_tokens_day AS tokens_day, g.budget_tokens_month AS tokens_month,
  g.budget_cost_day_usd AS cost_day_usd, g.budget_cost_month_usd AS cost_month_usd`;
/** `groups`' (`g`) budget columns as `json_build_object` arguments, named as `llm_user_budgets`' columns. */
export const GROUP_LIMITS_JSON = `'tokens_day', g.budget_tokens_day, 'tokens_month', g.budget_tokens_month,
  'cost_day_usd', g.budget_cost_day_usd, 'cost_month_usd', g.budget_cost_month_usd`;
/** Whether a `groups` row (`g`) has a budget. */
export const GROUP_HAS_BUDGET = `(g.budget_tokens_day IS NOT NULL OR g.budget_tokens_month IS NOT NULL
  OR g.budget_cost_day_usd IS NOT NULL OR g.budget_cost_month_usd IS NOT NULL)`;

/** The ledger's sums of the current UTC day and month per user (`llm_usage_daily`), for `$1::uuid[]`. */
const USED_SQL = `
  WITH b AS (SELECT (now() AT TIME ZONE 'UTC')::date AS day, date_trunc('month', now() AT TIME ZONE 'UTC')::date AS month)
  SELECT d.user_id,
         COALESCE(SUM(d.input_tokens + d.output_tokens) FILTER (WHERE d.day = b.day), 0)::bigint AS tokens_day,
         COALESCE(SUM(d.input_tokens + d.output_tokens), 0)::bigint AS tokens_month,
         COALESCE(SUM(d.cost_usd) FILTER (WHERE d.day = b.day), 0) AS cost_day,
         COALESCE(SUM(d.cost_usd), 0) AS cost_month
    FROM llm_usage_daily d, b
   WHERE d.user_id = ANY($1::uuid[]) AND d.day >= b.month
   GROUP BY d.user_id`;

type UsedRead = { user_id: string; tokens_day: string; tokens_month: string; cost_day: string; cost_month: string };
const toUsed = (r: UsedRead | undefined): Used => ({
  tokensDay: Number(r?.tokens_day ?? 0),
  tokensMonth: Number(r?.tokens_month ?? 0),
  costDay: Number(r?.cost_day ?? 0),
  costMonth: Number(r?.cost_month ?? 0),
});

/**
 * Budgets in Postgres: the admin's limits of users (`llm_user_budgets`), the groups' limits (read
 * here, written by the groups' repository), and the admission of limited users' model calls
 * (`llm_budget_users` as the per-user lock, `llm_budget_holds` for calls admitted and not yet in the
 * ledger). Every method takes the user.
 */
@Injectable()
export class BudgetsRepository {
  constructor(private readonly ds: Database) {}

  /**
   * One admission, in one short transaction shared by every replica: the user's row is locked (so
   * admissions of one user are one after another), then the ledger's sums of the day and month, the
   * holds that still count (calls in flight; answered calls whose message, and so whose ledger row, is
   * not committed yet) and the largest call are read, expired and counted-in-the-ledger holds
   * deleted, and `decide` says whether the call starts; when it does, a hold is written that expires
   * after `holdTtlMs`.
   */
  async admit(
    userId: string,
    decide: (s: BudgetSnapshot) => Admission,
    holdTtlMs: number,
  ): Promise<{ admission: Admission; holdId: string | null; snapshot: BudgetSnapshot }> {
    return this.ds.transaction(async (tx) => {
      const [state] = await queryRows<LlmBudgetUsersRow>(
        tx,
        `INSERT INTO llm_budget_users AS u (user_id) VALUES ($1) ON CONFLICT (user_id) DO UPDATE SET user_id = u.user_id
         RETURNING u.*`,
        [userId],
      );
      // A statement of its own: under READ COMMITTED it sees every admission committed before the lock.
      const [row] = await queryRows<
        UsedRead & { in_flight: number; settled_tokens: string; settled_cost: string; now: Date }
      >(
        tx,
        `WITH gone AS (
           DELETE FROM llm_budget_holds h
            WHERE h.user_id = $1::uuid
              AND (h.expires_at <= now()
                   OR (h.tokens IS NOT NULL AND EXISTS (SELECT 1 FROM chat_history c WHERE c.id = h.message_id)))),
         held AS (
           SELECT count(*) FILTER (WHERE h.tokens IS NULL)::int AS in_flight,
                  COALESCE(SUM(h.tokens), 0)::bigint AS settled_tokens, COALESCE(SUM(h.cost_usd), 0) AS settled_cost
             FROM llm_budget_holds h
            WHERE h.user_id = $1::uuid AND h.expires_at > now()
              AND NOT (h.tokens IS NOT NULL AND EXISTS (SELECT 1 FROM chat_history c WHERE c.id = h.message_id))),
         used AS (${USED_SQL.replace('= ANY($1::uuid[])', '= $1::uuid')})
         SELECT held.*, used.tokens_day, used.tokens_month, used.cost_day, used.cost_month, now() AS now
           FROM held LEFT JOIN used ON true`,
        [userId],
      );
      const snapshot: BudgetSnapshot = {
        used: toUsed(row),
        held: {
          inFlight: Number(row.in_flight),
          settledTokens: Number(row.settled_tokens),
          settledCost: Number(row.settled_cost),
        },
        largest: { tokens: Number(state.largest_call_tokens), costUsd: Number(state.largest_call_cost_usd) },
        now: new Date(row.now),
      };
      const admission = decide(snapshot);
      if (admission.kind !== 'admit') return { admission, holdId: null, snapshot };
      const holdId = randomUUID();
      await tx.query(
        `INSERT INTO llm_budget_holds (id, user_id, expires_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond')`,
        [holdId, userId, holdTtlMs],
      );
      return { admission, holdId, snapshot };
    });
  }

  /**
   * An admitted call was answered: its hold keeps the call's tokens and cost until its message
   * (`messageId`, whose commit writes the ledger row) exists, at most `ttlMs`; a call without a
   * message is in the ledger already, and its hold goes. The user's largest call grows to it.
   */
  async settle(
    scope: { userId: string; holdId: string },
    call: { tokens: number; costUsd: number; messageId: string | null },
    ttlMs: number,
  ): Promise<void> {
    await this.ds.query(
      `WITH h AS (
         UPDATE llm_budget_holds SET tokens = $3, cost_usd = $4, message_id = $5,
                expires_at = now() + $6 * interval '1 millisecond'
          WHERE id = $1 AND user_id = $2 AND $5::uuid IS NOT NULL),
       d AS (DELETE FROM llm_budget_holds WHERE id = $1 AND user_id = $2 AND $5::uuid IS NULL)
       UPDATE llm_budget_users SET largest_call_tokens = GREATEST(largest_call_tokens, $3),
              largest_call_cost_usd = GREATEST(largest_call_cost_usd, $4)
        WHERE user_id = $2`,
      [scope.holdId, scope.userId, call.tokens, call.costUsd, call.messageId, ttlMs],
    );
  }

  /** An admitted call that got no answer (or never started): its hold goes. */
  async release(scope: { userId: string; holdId: string }): Promise<void> {
    await this.ds.query(`DELETE FROM llm_budget_holds WHERE id = $1 AND user_id = $2`, [scope.holdId, scope.userId]);
  }

  /** The admin's limits of each user and their groups with a budget. */
  async ownerBudgets(userIds: readonly string[]): Promise<Map<string, OwnerBudget>> {
    const out = new Map<string, OwnerBudget>(userIds.map((u) => [u, { user: null, groups: [] }]));
    if (userIds.length === 0) return out;
    const [users, groups] = await Promise.all([
      queryRows<LlmUserBudgetsRow>(this.ds, `SELECT * FROM llm_user_budgets WHERE user_id = ANY($1::uuid[])`, [
        userIds,
      ]),
      queryRows<LimitColumns & { user_id: string; name: string }>(
        this.ds,
        `SELECT DISTINCT m.user_id, g.name, ${GROUP_LIMIT_COLUMNS}
           FROM group_members m JOIN groups g ON g.id = m.group_id
          WHERE m.user_id = ANY($1::uuid[]) AND ${GROUP_HAS_BUDGET}
          ORDER BY g.name`,
        [userIds],
      ),
    ]);
    for (const u of users) out.get(u.user_id)!.user = limitsOfRow(u);
    for (const g of groups) out.get(g.user_id)!.groups.push({ name: g.name, limits: limitsOfRow(g) });
    return out;
  }

  async ownerBudget(userId: string): Promise<OwnerBudget> {
    return (await this.ownerBudgets([userId])).get(userId)!;
  }

  /** The ledger's sums of the current UTC day and month of each user (zeros for a user without calls). */
  async used(userIds: readonly string[]): Promise<Map<string, Used>> {
    const rows = userIds.length === 0 ? [] : await queryRows<UsedRead>(this.ds, USED_SQL, [userIds]);
    const by = new Map(rows.map((r) => [r.user_id, r]));
    return new Map(userIds.map((u) => [u, toUsed(by.get(u))]));
  }

  /**
   * The users a limit may be near for: those with calls this month, an admin's limits, or a group
   * with a budget — the most tokens this month first, at most {@link BUDGET_CANDIDATES_MAX}.
   */
  async candidates(): Promise<string[]> {
    const rows = await queryRows<{ user_id: string }>(
      this.ds,
      `WITH month AS (
         SELECT user_id, SUM(input_tokens + output_tokens) AS tokens FROM llm_usage_daily
          WHERE day >= date_trunc('month', now() AT TIME ZONE 'UTC')::date GROUP BY user_id),
       limited AS (
         SELECT user_id FROM llm_user_budgets
         UNION SELECT m.user_id FROM group_members m JOIN groups g ON g.id = m.group_id WHERE ${GROUP_HAS_BUDGET})
       SELECT COALESCE(month.user_id, limited.user_id) AS user_id
         FROM month FULL JOIN limited ON limited.user_id = month.user_id
        ORDER BY month.tokens DESC NULLS LAST, 1
        LIMIT ${BUDGET_CANDIDATES_MAX}`,
    );
    return rows.map((r) => r.user_id);
  }

  /** Sets (limits) or clears (null) an admin's limits of one user. */
  async setUserLimits(userId: string, limits: Limits | null): Promise<void> {
    if (limits === null) {
      await this.ds.query(`DELETE FROM llm_user_budgets WHERE user_id = $1`, [userId]);
      return;
    }
    await this.ds.query(
      `INSERT INTO llm_user_budgets (user_id, tokens_day, tokens_month, cost_day_usd, cost_month_usd)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (user_id) DO UPDATE SET tokens_day = EXCLUDED.tokens_day, tokens_month = EXCLUDED.tokens_month,
         cost_day_usd = EXCLUDED.cost_day_usd, cost_month_usd = EXCLUDED.cost_month_usd, updated_at = now()`,
      [userId, limits.tokens_per_day, limits.tokens_per_month, limits.cost_usd_per_day, limits.cost_usd_per_month],
    );
  }
}
