import { BUDGET_DIMENSIONS, type BudgetDimension, type BudgetLimitsDto } from '@skald/contracts';

/**
 * The budget rules, pure: which limits are in force for a user, and whether one more model call
 * may start. No I/O: the repository reads what they need in the admission's transaction.
 */

/** A set of limits, by dimension (null: no limit on it). The wire's shape, kept as one fact. */
export type Limits = BudgetLimitsDto;

/** The limits of a session's owner as the tables hold them: an admin's for the user, and their groups'. */
export interface OwnerBudget {
  /** The admin's limits for this user (they replace the groups'); null: the groups decide. */
  user: Limits | null;
  /** The owner's groups that have at least one limit. */
  groups: { name: string; limits: Limits }[];
}

export type LimitSetBy = { kind: 'user' } | { kind: 'group'; name: string } | { kind: 'default' };

/** One limit in force. */
export interface Limit {
  dimension: BudgetDimension;
  limit: number;
  setBy: LimitSetBy;
}

export const isCost = (d: BudgetDimension): boolean => d === 'cost_usd_per_day' || d === 'cost_usd_per_month';
export const isMonthly = (d: BudgetDimension): boolean => d === 'tokens_per_month' || d === 'cost_usd_per_month';

export function hasAnyLimit(l: Limits): boolean {
  return BUDGET_DIMENSIONS.some((d) => l[d] !== null);
}

/**
 * The limits in force for a user:
 * - an admin's limits for the user replace everything else (their null dimensions are unlimited);
 * - else their groups with a budget: per dimension the most generous (a null is unlimited, so one
 *   such group without a limit on a dimension lifts it); a group without any limit takes no part,
 *   so joining a group that only lists agents never lifts a budget;
 * - else `defaultDailyTokens` (`SKALD_USER_DAILY_TOKENS`) as a daily token limit, when set.
 */
export function limitsInForce(owner: OwnerBudget, defaultDailyTokens: number | null): Limit[] {
  if (owner.user) {
    const user = owner.user;
    return BUDGET_DIMENSIONS.flatMap((d) => {
      const limit = user[d];
      return limit === null ? [] : [{ dimension: d, limit, setBy: { kind: 'user' } as const }];
    });
  }
  const groups = owner.groups.filter((g) => hasAnyLimit(g.limits));
  if (groups.length > 0) {
    const sorted = [...groups].sort((a, b) => a.name.localeCompare(b.name));
    return BUDGET_DIMENSIONS.flatMap((d) => {
      if (sorted.some((g) => g.limits[d] === null)) return [];
      let best = sorted[0];
      for (const g of sorted) if ((g.limits[d] as number) > (best.limits[d] as number)) best = g;
      return [{ dimension: d, limit: best.limits[d] as number, setBy: { kind: 'group', name: best.name } as const }];
    });
  }
  return defaultDailyTokens === null
    ? []
    : [{ dimension: 'tokens_per_day', limit: defaultDailyTokens, setBy: { kind: 'default' } }];
}

/** What a user used in the current UTC day and month (the ledger). */
export interface Used {
  tokensDay: number;
  tokensMonth: number;
  costDay: number;
  costMonth: number;
}

export function usedOn(u: Used, d: BudgetDimension): number {
  switch (d) {
    case 'tokens_per_day':
      return u.tokensDay;
    case 'tokens_per_month':
      return u.tokensMonth;
    case 'cost_usd_per_day':
      return u.costDay;
    case 'cost_usd_per_month':
      return u.costMonth;
  }
}

/**
 * Calls admitted and not yet in the ledger: `inFlight` still running (their size unknown), and the
 * tokens and cost of the answered ones whose ledger rows are not written yet (they count as used).
 */
export interface Held {
  inFlight: number;
  settledTokens: number;
  settledCost: number;
}

/** The largest call of the user seen so far: the size a call in flight is assumed to have. 0 tokens: none seen. */
export interface CallSize {
  tokens: number;
  costUsd: number;
}

export type Admission =
  | { kind: 'admit' }
  /** A limit is reached: `used` (ledger and answered calls) is at or past it. */
  | { kind: 'refuse'; limit: Limit; used: number }
  /** Below every limit, but the calls in flight may take what is left: ask again when they end. */
  | { kind: 'wait'; limit: Limit; used: number };

/**
 * Whether one more call may start, for a user with `limits` in force.
 * - Refused when what was used (the ledger plus answered calls not yet in it) reached a limit; of
 *   several, the one that resets last is named (the month's before the day's).
 * - With no call in flight, any call below every limit starts: the one call that crosses a limit is
 *   the whole overrun.
 * - With calls in flight, one more starts only when every limit has room for all of them and it at
 *   the size of the largest call seen (none seen yet: it waits). So calls run side by side while far
 *   from a limit and one at a time near it: no more than one call's worth (calls no larger than the
 *   largest before them) past a limit, whatever the number of workers.
 */
export function admission(limits: readonly Limit[], used: Used, held: Held, largest: CallSize): Admission {
  const spent = (d: BudgetDimension): number => usedOn(used, d) + (isCost(d) ? held.settledCost : held.settledTokens);
  let refused: { limit: Limit; used: number } | null = null;
  for (const l of limits) {
    const u = spent(l.dimension);
    if (u >= l.limit && (!refused || (isMonthly(l.dimension) && !isMonthly(refused.limit.dimension))))
      refused = { limit: l, used: u };
  }
  if (refused) return { kind: 'refuse', ...refused };
  if (held.inFlight === 0) return { kind: 'admit' };
  for (const l of limits) {
    const u = spent(l.dimension);
    const size = isCost(l.dimension) ? largest.costUsd : largest.tokens;
    if (largest.tokens === 0 || u + (held.inFlight + 1) * size > l.limit) return { kind: 'wait', limit: l, used: u };
  }
  return { kind: 'admit' };
}

/** Start of the UTC day and month of `now`, and when each ends. */
export function periods(now: Date): { dayEnds: Date; monthEnds: Date } {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  return {
    dayEnds: new Date(Date.UTC(y, m, now.getUTCDate() + 1)),
    monthEnds: new Date(Date.UTC(y, m + 1, 1)),
  };
}

export function resetsAt(d: BudgetDimension, now: Date): Date {
  const p = periods(now);
  return isMonthly(d) ? p.monthEnds : p.dayEnds;
}

/** used / limit in whole percent, rounded down; a limit of 0 is full. */
export function percentOf(used: number, limit: number): number {
  if (limit <= 0) return 100;
  return Math.floor((used / limit) * 100);
}
