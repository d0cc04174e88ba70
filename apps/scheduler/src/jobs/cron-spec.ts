import { parseExpression } from 'cron-parser';

/** A cron expression the user gave us that we refuse, with the field to name in the 400. */
export class InvalidCronError extends Error {
  constructor(
    readonly field: 'cron' | 'timezone',
    message: string,
  ) {
    super(message);
    this.name = 'InvalidCronError';
  }
}

function validTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * Validates a cron expression: five fields, or six with seconds first; the timezone an IANA name;
 * two consecutive fires at least `minIntervalS` apart (checked over the next fires).
 */
export function validateCron(expr: string, timezone: string, minIntervalS: number, now = new Date()): void {
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6)
    throw new InvalidCronError('cron', 'cron must have five fields, or six with seconds first');
  if (!validTimeZone(timezone)) throw new InvalidCronError('timezone', `unknown timezone \`${timezone}\``);
  let it;
  try {
    it = parseExpression(expr, { tz: timezone, currentDate: now });
  } catch (e) {
    throw new InvalidCronError('cron', `invalid cron expression: ${e instanceof Error ? e.message : String(e)}`);
  }
  let prev: number | null = null;
  for (let i = 0; i < 50; i++) {
    let next: number;
    try {
      next = it.next().getTime();
    } catch {
      if (prev === null) throw new InvalidCronError('cron', 'the cron expression never fires');
      return;
    }
    if (prev !== null && next - prev < minIntervalS * 1000)
      throw new InvalidCronError(
        'cron',
        `the schedule fires more often than every ${minIntervalS} s (the minimum interval)`,
      );
    prev = next;
  }
}

/** The first fire strictly after `after`, or null when the expression never fires again. */
export function nextFire(expr: string, timezone: string, after: Date): Date | null {
  try {
    return parseExpression(expr, { tz: timezone, currentDate: after }).next().toDate();
  } catch {
    return null;
  }
}

/** The last fire at or before `at` (the one due time a catch-up after downtime runs). */
export function lastFireAtOrBefore(expr: string, timezone: string, at: Date): Date | null {
  try {
    return parseExpression(expr, { tz: timezone, currentDate: new Date(at.getTime() + 1) })
      .prev()
      .toDate();
  } catch {
    return null;
  }
}
