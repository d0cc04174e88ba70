import { stringify } from 'csv-stringify/sync';
import type { UsageExportBy, UsageReport } from '@skald/contracts';

/**
 * A cell a spreadsheet would read as a formula (it starts with = + - @, or a tab or carriage
 * return that some strip first) gets a leading `'`, so opening the export runs nothing.
 */
export function neutralizeFormula(cell: string): string {
  return /^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell;
}

type Cell = string | number | null;

function table(report: UsageReport, by: UsageExportBy): { header: string[]; rows: Cell[][] } {
  const sums = ['calls', 'input_tokens', 'output_tokens', 'cost_usd'];
  switch (by) {
    case 'day':
      return {
        header: ['day', ...sums, 'failed_calls'],
        rows: report.days.map((d) => [d.day, d.calls, d.input_tokens, d.output_tokens, d.cost_usd, d.failed_calls]),
      };
    case 'model':
      return {
        header: ['client', 'model', ...sums, 'failed_calls'],
        rows: report.models.map((m) => [
          m.client,
          m.model,
          m.calls,
          m.input_tokens,
          m.output_tokens,
          m.cost_usd,
          m.failed_calls,
        ]),
      };
    case 'user':
      return {
        header: ['user_id', 'email', ...sums],
        rows: report.top_users.map((u) => [u.user_id, u.email, u.calls, u.input_tokens, u.output_tokens, u.cost_usd]),
      };
    case 'group':
      return {
        header: ['group_id', 'group', 'users', ...sums],
        rows: report.groups.map((g) => [
          g.group_id,
          g.name ?? '(no group)',
          g.users,
          g.calls,
          g.input_tokens,
          g.output_tokens,
          g.cost_usd,
        ]),
      };
    case 'failure':
      return {
        header: ['day', 'client', 'model', 'error_kind', 'calls'],
        rows: report.failures.map((f) => [f.day, f.client, f.model, f.error_kind, f.calls]),
      };
  }
}

/**
 * One table of a usage report as CSV (RFC 4180 quoting by csv-stringify, CRLF line ends): text
 * cells are neutralised against formula injection, numbers are written as they are, a missing
 * cost is an empty cell.
 */
export function usageCsv(report: UsageReport, by: UsageExportBy): string {
  const { header, rows } = table(report, by);
  const cells = rows.map((row) =>
    row.map((c) => (c === null ? '' : typeof c === 'number' ? String(c) : neutralizeFormula(c))),
  );
  return stringify([header, ...cells], { record_delimiter: 'windows' });
}
