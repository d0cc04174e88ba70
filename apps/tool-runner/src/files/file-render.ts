import { z } from 'zod';
import { ToolError } from '../tool-error';
import type { ReadFileArgs, SearchFileArgs } from './file-tool-args';
import { FILE_LIMITS } from './file-limits.constants';
import { displayLines, numbered } from './text';

// What the file tools answer the model for a text: numbered lines, matches with context, capped.

type Args<S extends z.ZodType> = z.output<S>;

/** `read_file`'s answer for a text: numbered lines of the asked range, capped, with a pointer to the rest. */
export function renderRead(virtual: string, text: string, args: Args<typeof ReadFileArgs>): string {
  const lines = displayLines(text);
  const n = lines.length;
  if (n === 0) return `(${virtual} is empty)`;
  const start = args.start_line ?? 1;
  if (start > n)
    throw new ToolError(
      'invalid_argument',
      `read_file: start_line ${start} is past the end of ${virtual} (${n} line${n === 1 ? '' : 's'})`,
    );
  if (args.end_line !== undefined && args.end_line < start) {
    throw new ToolError('invalid_argument', `read_file: end_line ${args.end_line} is before start_line ${start}`);
  }
  const limit = args.limit ?? (args.end_line === undefined ? FILE_LIMITS.readDefaultLines : Number.MAX_SAFE_INTEGER);
  const end = Math.min(n, args.end_line ?? n, start + limit - 1);
  const out: string[] = [];
  let chars = 0;
  let last = start - 1;
  for (let i = start; i <= end; i++) {
    const line = numbered(i, lines[i - 1]);
    if (chars + line.length + 1 > FILE_LIMITS.outputMaxChars && out.length > 0) break;
    out.push(line);
    chars += line.length + 1;
    last = i;
  }
  let result = out.join('\n');
  if (start > 1 || last < n) {
    result += `\n[lines ${start}–${last} of ${n}${last < n ? `; call read_file with start_line=${last + 1} to read more` : ''}]`;
  }
  return result;
}

/** `search_file`'s answer for a text: matching lines with context, grep-style. */
export function renderSearch(virtual: string, text: string, args: Args<typeof SearchFileArgs>): string {
  const lines = displayLines(text);
  const needle = args.query.toLowerCase();
  const hits: number[] = [];
  lines.forEach((l, i) => {
    if (l.toLowerCase().includes(needle)) hits.push(i);
  });
  if (hits.length === 0) return `No matches for "${args.query}" in ${virtual}`;
  const shown = hits.slice(0, FILE_LIMITS.searchMaxMatches);
  const body = contextBlocks(
    shown,
    lines,
    args.context_lines,
    (i, sep, l) => `${String(i + 1).padStart(6)}${sep} ${l}`,
  );
  const more =
    hits.length > shown.length ? `\n[${hits.length - shown.length} more matches not shown; narrow the query]` : '';
  const head = `${hits.length} match${hits.length === 1 ? '' : 'es'} for "${args.query}" in ${virtual}:\n${body}`;
  return capOutput(head) + more;
}

/** Cuts tool output at the output cap, saying so. */
export function capOutput(text: string): string {
  if (text.length <= FILE_LIMITS.outputMaxChars) return text;
  return `${text.slice(0, FILE_LIMITS.outputMaxChars)}\n[output cut at ${FILE_LIMITS.outputMaxChars} characters; narrow the request]`;
}

/** grep-style blocks: matching lines with `:`, context lines with `-`, groups separated by `--`. */
export function contextBlocks(
  hits: number[],
  lines: string[],
  context: number,
  format: (i: number, sep: ':' | '-', line: string) => string,
): string {
  const hitSet = new Set(hits);
  const out: string[] = [];
  let lastShown = -2;
  for (const h of hits) {
    const from = Math.max(0, h - context, lastShown + 1);
    const to = Math.min(lines.length - 1, h + context);
    if (lastShown >= 0 && from > lastShown + 1) out.push('--');
    for (let i = from; i <= to; i++) {
      out.push(
        format(
          i,
          hitSet.has(i) ? ':' : '-',
          (lines[i] ?? '').length > 2000 ? `${lines[i].slice(0, 2000)}…` : (lines[i] ?? ''),
        ),
      );
      lastShown = i;
    }
  }
  return out.join('\n');
}
