import { z } from 'zod';
import { Actor, Id, Timestamp } from './common';
import { replyOf } from './reply';

/**
 * Budgets: limits on a user's LLM tokens (input + output) and cost (USD, from the clients'
 * configured prices) per UTC day and per UTC month. A limit is set on a group (for each member)
 * or on one user by an admin (replacing their groups' limits); null is no limit on that dimension.
 */
export const BUDGET_DIMENSIONS = [
  'tokens_per_day',
  'tokens_per_month',
  'cost_usd_per_day',
  'cost_usd_per_month',
] as const;
export type BudgetDimension = (typeof BUDGET_DIMENSIONS)[number];

/** The largest limit accepted: far above any real budget, inside a bigint and exact in a double. */
export const BUDGET_TOKENS_MAX = 1e15;
export const BUDGET_USD_MAX = 1e9;

const Tokens = z.number().int().min(0).max(BUDGET_TOKENS_MAX);
/** Dollars with at most 6 decimals (what the ledger keeps). */
const Usd = z
  .number()
  .min(0)
  .max(BUDGET_USD_MAX)
  .refine((n) => Math.abs(Math.round(n * 1e6) - n * 1e6) < 1e-6 * Math.max(1, n), 'at most 6 decimals');

/** A set of limits as an admin writes it: a field left out or null is no limit on that dimension. */
export const BudgetLimits = z.strictObject({
  tokens_per_day: Tokens.nullable().default(null),
  tokens_per_month: Tokens.nullable().default(null),
  cost_usd_per_day: Usd.nullable().default(null),
  cost_usd_per_month: Usd.nullable().default(null),
});
export type BudgetLimits = z.infer<typeof BudgetLimits>;
/** A set of limits as it is answered: every dimension present. */
export const BudgetLimitsDto = z.object({
  tokens_per_day: z.number().nullable(),
  tokens_per_month: z.number().nullable(),
  cost_usd_per_day: z.number().nullable(),
  cost_usd_per_month: z.number().nullable(),
});
export type BudgetLimitsDto = z.infer<typeof BudgetLimitsDto>;
export const NO_BUDGET_LIMITS: BudgetLimitsDto = {
  tokens_per_day: null,
  tokens_per_month: null,
  cost_usd_per_day: null,
  cost_usd_per_month: null,
};

/**
 * One limit in force for a user and its use: who set it (`user`: an admin for this user; `group`:
 * the group named, the most generous of the user's groups with a budget; `default`:
 * `SKALD_USER_DAILY_TOKENS`), what was used in the current day or month (UTC) and when it resets.
 */
export const BudgetLimitUse = z.object({
  dimension: z.enum(BUDGET_DIMENSIONS),
  limit: z.number(),
  used: z.number(),
  /** used / limit × 100, rounded down (100 when the limit is 0). */
  percent: z.number().int(),
  set_by: z.enum(['user', 'group', 'default']),
  group: z.string().nullable(),
  resets_at: Timestamp,
});
export type BudgetLimitUse = z.infer<typeof BudgetLimitUse>;

/** A user's budget: the admin's limits for them (null: their groups decide) and the limits in force with their use. */
export const BudgetStatus = z.object({
  user_id: Id,
  user_limits: BudgetLimitsDto.nullable(),
  limits: z.array(BudgetLimitUse),
});
export type BudgetStatus = z.infer<typeof BudgetStatus>;

/** The most users `GET /api/admin/budgets` lists (those closest to a limit first). */
export const BUDGET_LIST_MAX = 500;

/** `GET /api/admin/budgets`: users at `min_percent` or more of any limit in force. */
export const AdminBudgetsQuery = z.strictObject({
  min_percent: z.coerce.number().int().min(0).max(100).default(80),
});
export type AdminBudgetsQuery = z.infer<typeof AdminBudgetsQuery>;
export const AdminBudgetRow = BudgetStatus.extend({ email: z.string().nullable() });
export type AdminBudgetRow = z.infer<typeof AdminBudgetRow>;
export const AdminBudgetList = z.object({ items: z.array(AdminBudgetRow) });
export type AdminBudgetList = z.infer<typeof AdminBudgetList>;

// The session worker owns the limits and the ledger; the gateway's routes call it on NATS.

/** A user's budget: the user themselves or an admin (anyone else: `forbidden`). */
export const BudgetsStatusRequest = z.object({ actor: Actor, user_id: Id });
/** An admin sets (`limits`) or clears (null: the groups decide again) a user's limits. */
export const BudgetsSetUserRequest = z.object({ actor: Actor, user_id: Id, limits: BudgetLimits.nullable() });
/** An admin's list of users near a limit (users unnamed: the gateway names them). */
export const BudgetsNearRequest = z.object({ actor: Actor, min_percent: z.number().int().min(0).max(100) });

export const BUDGET_SUBJECTS = {
  'budgets.status': { request: BudgetsStatusRequest, reply: replyOf(BudgetStatus), queue: 'session-worker' },
  'budgets.set_user': { request: BudgetsSetUserRequest, reply: replyOf(BudgetStatus), queue: 'session-worker' },
  'budgets.near': {
    request: BudgetsNearRequest,
    reply: replyOf(z.object({ items: z.array(BudgetStatus) })),
    queue: 'session-worker',
  },
} as const;
