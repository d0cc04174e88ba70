import stringWidth from 'string-width';

/** A column of a table: its heading and how a row shows in it. */
export interface Column<T> {
  heading: string;
  cell: (row: T) => string | number | boolean | null | undefined;
  /** Cut cells to this many columns (with …). */
  max?: number;
}

function fit(text: string, max: number | undefined): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  if (max === undefined || stringWidth(oneLine) <= max) return oneLine;
  let out = '';
  for (const ch of oneLine) {
    if (stringWidth(out + ch) > max - 1) break;
    out += ch;
  }
  return `${out}…`;
}

const shown = (v: string | number | boolean | null | undefined): string =>
  v === null || v === undefined || v === '' ? '-' : String(v);

/** Rows as aligned columns for people (one line each, long cells cut); `empty` when there are none. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[], empty: string): string {
  if (rows.length === 0) return `${empty}\n`;
  const cells = rows.map((r) => columns.map((c) => fit(shown(c.cell(r)), c.max)));
  const widths = columns.map((c, i) => Math.max(stringWidth(c.heading), ...cells.map((row) => stringWidth(row[i]))));
  const line = (parts: string[]) =>
    parts
      .map((p, i) => (i === parts.length - 1 ? p : p + ' '.repeat(widths[i] - stringWidth(p))))
      .join('  ')
      .trimEnd();
  return `${[line(columns.map((c) => c.heading.toUpperCase())), ...cells.map(line)].join('\n')}\n`;
}

/** A timestamp as people read it in a table: `2026-12-07 02:31` (UTC). */
export function when(iso: string | null | undefined): string {
  if (!iso) return '-';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toISOString().slice(0, 16).replace('T', ' ')}Z`;
}
