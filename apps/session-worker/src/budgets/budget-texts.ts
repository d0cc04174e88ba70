import type { BudgetDimension } from '@skald/contracts';
import { duration, usd } from '../llm/llm-texts';
import { isCost, isMonthly, resetsAt, type Limit } from './budget-rules';

const int = (n: number): string => n.toLocaleString('en-US');

/** `$5.00`, `$0.0123`: dollars as the ledger reads. */
const dollars = (n: number): string => (n >= 1 || n === 0 ? `$${n.toFixed(2)}` : usd(n));

/** `2,000,000 tokens` or `$5.00`. */
export function amount(d: BudgetDimension, n: number): string {
  return isCost(d) ? dollars(n) : `${int(n)} tokens`;
}

/** `daily token limit of 2,000,000`, `monthly cost limit of $5.00`. */
function limitPhrase(l: Limit): string {
  const period = isMonthly(l.dimension) ? 'monthly' : 'daily';
  const value = isCost(l.dimension) ? dollars(l.limit) : int(l.limit);
  return `${period} ${isCost(l.dimension) ? 'cost' : 'token'} limit of ${value}`;
}

/** Who set it: `your daily token limit of …`, `your group "Interns" daily cost limit of $5.00`, `the deployment's …`. */
export function limitName(l: Limit): string {
  switch (l.setBy.kind) {
    case 'user':
      return `your ${limitPhrase(l)}`;
    case 'group':
      return `your group "${l.setBy.name}" ${limitPhrase(l)}`;
    case 'default':
      return `the deployment's ${limitPhrase(l)}`;
  }
}

const capitalised = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);
const periodWord = (d: BudgetDimension): string => (isMonthly(d) ? 'this month' : 'today');

/** `at 00:00 UTC on 2026-12-08 (in 5 h 12 min)`. */
export function resetPhrase(d: BudgetDimension, now: Date): string {
  const at = resetsAt(d, now);
  return `at 00:00 UTC on ${at.toISOString().slice(0, 10)} (in ${duration(at.getTime() - now.getTime())})`;
}

/** The `exhausted` error of a call refused by a limit: which limit, what was used, when it resets. */
export function refusalText(l: Limit, used: number, now: Date): string {
  return (
    `${capitalised(limitName(l))} is used up: ${amount(l.dimension, used)} used ${periodWord(l.dimension)} (UTC). ` +
    `It resets ${resetPhrase(l.dimension, now)}; until then the agent cannot call a model for you.`
  );
}

/** The `exhausted` error of a call that waited in vain for the user's calls in flight near a limit. */
export function busyText(l: Limit, used: number, now: Date): string {
  return (
    `${capitalised(limitName(l))} is nearly used up: ${amount(l.dimension, used)} used ${periodWord(l.dimension)} (UTC), ` +
    `and your model calls in progress in other conversations may take the rest. Try again when they have finished; ` +
    `the limit resets ${resetPhrase(l.dimension, now)}.`
  );
}

/** One line of `/cost` per limit in force: `Today (UTC): 1,200 tokens of your daily token limit of 50,000 used; …`. */
export function limitUseLine(l: Limit, used: number, now: Date): string {
  const when = isMonthly(l.dimension) ? 'This month (UTC)' : 'Today (UTC)';
  return `${when}: ${amount(l.dimension, used)} of ${limitName(l)} used; it resets ${resetPhrase(l.dimension, now)}.`;
}
