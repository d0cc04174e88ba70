import * as fc from 'fast-check';
import { formatZonedDateTime } from './datetime';

/** The formatter as it was: every part from `Intl` for the date itself (the reference). */
function reference(date: Date, timeZone: string): string {
  const fmt = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const parts: Record<string, string> = {};
  for (const p of fmt.formatToParts(date)) parts[p.type] = p.value;
  const y = Number(parts['year']);
  const mo = Number(parts['month']);
  const d = Number(parts['day']);
  const h = Number(parts['hour']);
  const mi = Number(parts['minute']);
  const s = Number(parts['second']);
  const asUtc = Date.UTC(y, mo - 1, d, h, mi, s);
  const offsetMin = Math.round((asUtc - Math.floor(date.getTime() / 1000) * 1000) / 60000);
  const sign = offsetMin < 0 ? '-' : '+';
  const abs = Math.abs(offsetMin);
  const pad = (n: number): string => String(n).padStart(2, '0');
  const offset = `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
  return `${y}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}${offset} (${timeZone})`;
}

const ZONES = Intl.supportedValuesOf('timeZone');
// Instants next to transitions: DST starts and ends (whole and half hours), a skipped day, the end
// of local mean time (offsets with seconds, transitions off the UTC minute).
const EDGES = [
  Date.UTC(2026, 2, 29, 1, 0, 0), // Europe: summer time starts
  Date.UTC(2026, 9, 25, 1, 0, 0), // Europe: ends
  Date.UTC(2026, 2, 8, 7, 0, 0), // America/New_York starts
  Date.UTC(2026, 3, 4, 15, 0, 0), // Australia/Lord_Howe: 30-minute shift
  Date.UTC(1994, 11, 31, 10, 0, 0), // Pacific/Kiritimati skips a day
  Date.UTC(1911, 2, 10, 23, 50, 39), // Europe/Paris leaves Paris mean time (+00:09:21)
  Date.UTC(1880, 7, 1, 23, 58, 45), // Europe/London leaves LMT (-00:01:15)
  Date.UTC(1920, 0, 1, 0, 0, 0),
];
const MIN = Date.UTC(1000, 0, 1);
const MAX = Date.UTC(9999, 11, 31);

const instant = fc.oneof(
  fc.integer({ min: MIN, max: MAX }),
  fc.tuple(fc.constantFrom(...EDGES), fc.integer({ min: -7_200_000, max: 7_200_000 })).map(([e, d]) => e + d),
);
const zone = fc.oneof(
  fc.constantFrom(
    'Europe/Rome',
    'Europe/Paris',
    'Europe/London',
    'America/New_York',
    'Australia/Lord_Howe',
    'Pacific/Kiritimati',
    'Asia/Kolkata',
    'UTC',
  ),
  fc.constantFrom(...ZONES),
);

describe('formatZonedDateTime', () => {
  it('equals the formatter that asks Intl for every date, whatever the order of calls (seeded)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(zone, instant, fc.array(fc.integer({ min: -61_000, max: 61_000 }), { maxLength: 4 })), {
          minLength: 1,
          maxLength: 20,
        }),
        (calls) => {
          for (const [tz, at, nearby] of calls)
            for (const ms of [at, ...nearby.map((d) => at + d)]) {
              if (ms < MIN || ms > MAX) continue;
              expect(formatZonedDateTime(new Date(ms), tz)).toBe(reference(new Date(ms), tz));
            }
        },
      ),
      { seed: 1911, numRuns: 400 },
    );
  });

  it('every second across transitions, walked forwards and backwards', () => {
    for (const [tz, edge] of [
      ['Europe/Paris', EDGES[5]],
      ['Europe/London', EDGES[6]],
      ['Australia/Lord_Howe', EDGES[3]],
      ['Europe/Rome', EDGES[0]],
      ['Pacific/Kiritimati', EDGES[4]],
    ] as const) {
      for (let d = -150_000; d <= 150_000; d += 1000) {
        const ms = edge + d;
        expect(formatZonedDateTime(new Date(ms), tz)).toBe(reference(new Date(ms), tz));
      }
      for (let d = 150_000; d >= -150_000; d -= 1000) {
        const ms = edge + d + 500;
        expect(formatZonedDateTime(new Date(ms), tz)).toBe(reference(new Date(ms), tz));
      }
    }
  });

  it('refuses an invalid date and an unknown zone as Intl does', () => {
    expect(() => formatZonedDateTime(new Date(NaN), 'UTC')).toThrow(RangeError);
    expect(() => formatZonedDateTime(new Date(0), 'Not/AZone')).toThrow(RangeError);
  });
});
