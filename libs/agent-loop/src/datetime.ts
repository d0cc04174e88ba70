/** Formatters by time zone (building one costs more than formatting with it); at most `MAX_ZONES`. */
const formatters = new Map<string, Intl.DateTimeFormat>();
const MAX_ZONES = 64;

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let fmt = formatters.get(timeZone);
  if (!fmt) {
    fmt = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    if (formatters.size >= MAX_ZONES) formatters.clear();
    formatters.set(timeZone, fmt);
  }
  return fmt;
}

/** A zone's offset (ms, local − UTC, whole seconds) over one UTC minute, when it holds all of it. */
const minuteOffsets = new Map<string, { minute: number; offsetMs: number }>();

/** Local − UTC for the whole second of `ms` in `timeZone`, as the zone's formatter says (ms). */
function offsetAt(fmt: Intl.DateTimeFormat, ms: number): number {
  let y = 0;
  let mo = 0;
  let d = 0;
  let h = 0;
  let mi = 0;
  let s = 0;
  for (const p of fmt.formatToParts(ms)) {
    if (p.type === 'year') y = Number(p.value);
    else if (p.type === 'month') mo = Number(p.value);
    else if (p.type === 'day') d = Number(p.value);
    else if (p.type === 'hour') h = Number(p.value);
    else if (p.type === 'minute') mi = Number(p.value);
    else if (p.type === 'second') s = Number(p.value);
  }
  return Date.UTC(y, mo - 1, d, h, mi, s) - Math.floor(ms / 1000) * 1000;
}

/**
 * `2026-06-17T21:20:00+01:00 (Europe/Rome)`: local time in the zone, offset, zone name.
 *
 * The zone's offset is asked of `Intl` once per UTC minute and zone (a turn's rounds mostly fall
 * in the same minute): kept only when the minute's first and last second have the same offset, so
 * no transition (not even a historical one off the minute) falls inside it; any other minute asks
 * `Intl` for the date itself.
 */
export function formatZonedDateTime(date: Date, timeZone: string): string {
  const ms = date.getTime();
  if (!Number.isFinite(ms)) throw new RangeError('Invalid time value');
  const fmt = formatterFor(timeZone);
  const minute = Math.floor(ms / 60_000);
  let offsetMs: number;
  const known = minuteOffsets.get(timeZone);
  if (known !== undefined && known.minute === minute) offsetMs = known.offsetMs;
  else {
    offsetMs = offsetAt(fmt, ms);
    const first = minute * 60_000;
    if (offsetAt(fmt, first) === offsetMs && offsetAt(fmt, first + 59_000) === offsetMs) {
      if (minuteOffsets.size >= MAX_ZONES && !minuteOffsets.has(timeZone)) minuteOffsets.clear();
      minuteOffsets.set(timeZone, { minute, offsetMs });
    }
  }
  const local = new Date(Math.floor(ms / 1000) * 1000 + offsetMs);
  const y = local.getUTCFullYear();
  const offsetMin = Math.round(offsetMs / 60000);
  const sign = offsetMin < 0 ? '-' : '+';
  const abs = Math.abs(offsetMin);
  const pad = (n: number): string => String(n).padStart(2, '0');
  const offset = `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
  return (
    `${y}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())}T${pad(local.getUTCHours())}:` +
    `${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())}${offset} (${timeZone})`
  );
}
