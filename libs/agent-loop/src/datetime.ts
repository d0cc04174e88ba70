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

/** `2026-06-17T21:20:00+01:00 (Europe/Rome)`: local time in the zone, offset, zone name. */
export function formatZonedDateTime(date: Date, timeZone: string): string {
  const fmt = formatterFor(timeZone);
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
