import fc from 'fast-check';
import { describeZodError } from './common';
import { AdminUsageQuery, USAGE_MAX_DAYS, UsageExportQuery, UsageQuery, usageDays } from './usage';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : 39;
const DAY_MS = 86_400_000;
const day = (t: number): string => new Date(t).toISOString().slice(0, 10);

/** What a range query is meant to accept, written from the calendar (Date), not from the schema. */
function expectedOk(from: string, until: string): boolean {
  const valid = (s: string) => {
    const t = Date.parse(`${s}T00:00:00Z`);
    return /^\d{4}-\d{2}-\d{2}$/.test(s) && Number.isFinite(t) && day(t) === s;
  };
  if (!valid(from) || !valid(until)) return false;
  const n = (Date.parse(`${until}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS;
  return n >= 1 && n <= USAGE_MAX_DAYS;
}

const realDay = fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(9999, 11, 1) }).map(day);
const hostileDay = fc.oneof(
  realDay,
  fc.constantFrom('2026-02-29', '2024-02-29', '2026-13-01', '2026-00-10', '2026-04-31', '0000-01-01', '2026-1-1'),
  fc.constantFrom('2026-01-01T00:00:00Z', ' 2026-01-01', '2026-01-01\n', '２０２６-01-01', '2026-01-01\u0000', ''),
  fc.string({ maxLength: 12 }),
);

describe('usage range queries', () => {
  it('accept exactly the calendar ranges of 1..366 days, and name the field of a refusal', () => {
    fc.assert(
      fc.property(hostileDay, fc.oneof(hostileDay, fc.integer({ min: -3, max: 400 })), (from, untilOrDays) => {
        const until =
          typeof untilOrDays === 'number'
            ? day(Date.parse(`${from}T00:00:00Z`) + untilOrDays * DAY_MS || 0)
            : untilOrDays;
        const ok = expectedOk(from, until);
        for (const schema of [UsageQuery, AdminUsageQuery, UsageExportQuery]) {
          const r = schema.safeParse({ from, until });
          expect(r.success).toBe(ok);
          if (!r.success) expect(['from', 'until']).toContain(describeZodError(r.error).field);
        }
        if (ok) expect(usageDays(from, until)).toBeGreaterThanOrEqual(1);
      }),
      { seed, numRuns: 3000 },
    );
  });

  it('refuse an unknown parameter and a top outside 1..100, naming it', () => {
    const r = UsageQuery.safeParse({ from: '2026-01-01', until: '2026-02-01', user_id: 'x' });
    expect(r.success ? null : describeZodError(r.error)).toEqual({
      field: 'user_id',
      message: 'user_id: not a parameter here',
    });
    fc.assert(
      fc.property(fc.oneof(fc.integer(), fc.string(), fc.double()), (top) => {
        const q = AdminUsageQuery.safeParse({ from: '2026-01-01', until: '2026-02-01', top });
        const n = typeof top === 'string' && top.trim() !== '' ? Number(top) : top;
        const ok = typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 100;
        expect(q.success).toBe(ok);
        if (!q.success) expect(describeZodError(q.error).field).toBe('top');
      }),
      { seed, numRuns: 2000 },
    );
    expect(UsageExportQuery.safeParse({ from: '2026-01-01', until: '2026-01-02', by: 'session' }).success).toBe(false);
  });
});
