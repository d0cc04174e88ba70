import { z } from 'zod';
import { Actor, Id } from './common';

/** The longest range a usage report covers, in days (a leap year and one day). */
export const USAGE_MAX_DAYS = 366;
/** The most users a report ranks (`top`). */
export const USAGE_TOP_MAX = 100;
/**
 * The most rows of a CSV export by user (most tokens first): the worker's reply carries them over
 * NATS, whose messages stay under 1 MiB (about 130 bytes a user).
 */
export const USAGE_EXPORT_USERS_MAX = 5_000;

const DAY_MS = 86_400_000;

/** A UTC day, `YYYY-MM-DD`, that exists in the calendar. */
export const UsageDay = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'expected a day as YYYY-MM-DD')
  .refine((s) => {
    const t = Date.parse(`${s}T00:00:00Z`);
    return Number.isFinite(t) && new Date(t).toISOString().slice(0, 10) === s;
  }, 'not a day of the calendar');

/** Days between two valid `YYYY-MM-DD` days (`until - from`). */
export function usageDays(from: string, until: string): number {
  return Math.round((Date.parse(`${until}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);
}

/** `[from, until)` in UTC days: `until` after `from`, at most `USAGE_MAX_DAYS` apart. */
const rangeShape = { from: UsageDay, until: UsageDay };
function checkRange(q: { from: string; until: string }, ctx: z.RefinementCtx): void {
  const days = usageDays(q.from, q.until);
  if (days < 1) ctx.addIssue({ code: 'custom', path: ['until'], message: 'must be a later day than from' });
  else if (days > USAGE_MAX_DAYS)
    ctx.addIssue({ code: 'custom', path: ['until'], message: `at most ${USAGE_MAX_DAYS} days after from` });
}

/**
 * `GET /api/llm/usage` and `GET /api/admin/usage/users/{id}`: one user's usage over `[from, until)`.
 * A parameter a usage route does not take (a `user_id` on a user's own report) is a 400 naming it.
 */
export const UsageQuery = z.strictObject(rangeShape).superRefine(checkRange);
export type UsageQuery = z.infer<typeof UsageQuery>;

/** `GET /api/admin/usage`: every user's usage, with the `top` users by tokens. */
export const AdminUsageQuery = z
  .strictObject({ ...rangeShape, top: z.coerce.number().int().min(1).max(USAGE_TOP_MAX).default(10) })
  .superRefine(checkRange);
export type AdminUsageQuery = z.infer<typeof AdminUsageQuery>;

/** `GET /api/admin/usage/export`: one table of the report as CSV. */
export const UsageExportBy = z.enum(['day', 'model', 'user', 'group', 'failure']);
export type UsageExportBy = z.infer<typeof UsageExportBy>;
export const UsageExportQuery = z
  .strictObject({ ...rangeShape, by: UsageExportBy.default('day') })
  .superRefine(checkRange);
export type UsageExportQuery = z.infer<typeof UsageExportQuery>;

/** Sums over a set of answered calls. `cost_usd`: null when no call of the set had a price. */
export const UsageSums = z.object({
  calls: z.number().int().nonnegative(),
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  cost_usd: z.number().nullable(),
});
export type UsageSums = z.infer<typeof UsageSums>;

export const UsageDayRow = UsageSums.extend({ day: z.string(), failed_calls: z.number().int().nonnegative() });
export type UsageDayRow = z.infer<typeof UsageDayRow>;
export const UsageModelRow = UsageSums.extend({
  client: z.string(),
  model: z.string(),
  failed_calls: z.number().int().nonnegative(),
});
export type UsageModelRow = z.infer<typeof UsageModelRow>;
export const UsageUserRow = UsageSums.extend({ user_id: Id, email: z.string().nullable() });
export type UsageUserRow = z.infer<typeof UsageUserRow>;
/**
 * Usage per group over the range, by current membership: a user in several groups counts in each;
 * `group_id` null is the users in no group. `users`: the members who called a model in the range.
 */
export const UsageGroupRow = UsageSums.extend({
  group_id: Id.nullable(),
  name: z.string().nullable(),
  users: z.number().int().nonnegative(),
});
export type UsageGroupRow = z.infer<typeof UsageGroupRow>;
/** Calls that got no answer (the provider failed, timed out or refused), per day, client, model and kind. */
export const UsageFailureRow = z.object({
  day: z.string(),
  client: z.string(),
  model: z.string(),
  error_kind: z.string(),
  calls: z.number().int().nonnegative(),
});
export type UsageFailureRow = z.infer<typeof UsageFailureRow>;

/**
 * A usage report over `[from, until)` (UTC days): totals, per day (every day of the range, zeros
 * included), per client and model, failed calls, and for an admin's overview the top users.
 */
export const UsageReport = z.object({
  from: z.string(),
  until: z.string(),
  /** The user the report is about; null for every user (an admin's overview). */
  user_id: Id.nullable(),
  totals: UsageSums.extend({ failed_calls: z.number().int().nonnegative() }),
  days: z.array(UsageDayRow),
  models: z.array(UsageModelRow),
  failures: z.array(UsageFailureRow),
  /** The top users by tokens (an admin's overview only; empty otherwise). */
  top_users: z.array(UsageUserRow),
  /** Per group, most tokens first (an admin's overview of every user only; empty otherwise). */
  groups: z.array(UsageGroupRow),
});
export type UsageReport = z.infer<typeof UsageReport>;

/**
 * `usage.report`: the report of one user (`user_id`) or of every user (null, admins only), with
 * the `top` users. The worker answers `forbidden` to a non-admin asking for anyone but themselves.
 */
export const UsageReportRequest = z.object({
  actor: Actor,
  user_id: Id.nullable(),
  from: UsageDay,
  until: UsageDay,
  top: z.number().int().min(0).max(USAGE_EXPORT_USERS_MAX),
});
export type UsageReportRequest = z.infer<typeof UsageReportRequest>;
/** What the worker answers: the report with users unnamed (the gateway, which owns users, names them). */
export const UsageReportReply = UsageReport.extend({ top_users: z.array(UsageUserRow.omit({ email: true })) });
export type UsageReportReply = z.infer<typeof UsageReportReply>;
