import type { BypassScope } from '@skald/contracts';
import { structuredPatch } from 'diff';

/** A run of text with one style: what a line of the terminal is made of. */
export interface Segment {
  text: string;
  color?: 'red' | 'green' | 'yellow' | 'cyan' | 'magenta' | 'gray' | 'blue';
  dim?: boolean;
  bold?: boolean;
}
export type Line = Segment[];

/** Lines shown of a long result or diff, at most; the rest is counted. */
export const MAX_SHOWN_LINES = 40;

/** A narrow session scope as a person reads it (what "approve for this session" will also allow). */
export function describeScope(s: BypassScope | 'call'): string {
  if (s === 'call') return "this call's kind";
  if (s === 'all') return 'every tool';
  if ('category' in s) return `every ${s.category} tool`;
  if ('mcp_server' in s) return `every tool of MCP server ${s.mcp_server}`;
  if (s.program !== undefined) {
    const cmd = [s.program, s.subcommand ?? ''].filter(Boolean).join(' ');
    return `\`${cmd}\` commands`;
  }
  if (s.directory !== undefined) return `${s.tool} in ${s.directory}`;
  if (s.host !== undefined) return `${s.tool} of pages on ${s.host}`;
  return `every ${s.tool} call`;
}

/** How long a session approval lasts, from its seconds. */
export function describeSecs(secs: number): string {
  if (secs % 3600 === 0) return `${secs / 3600} h`;
  if (secs % 60 === 0) return `${secs / 60} min`;
  return `${secs} s`;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** What a tool row shows after the tool's name: the command, the path, or the arguments in short. */
export function toolDetail(name: string, args: unknown, path?: string): string {
  if (typeof args === 'string') return args;
  const a = typeof args === 'object' && args !== null ? (args as Record<string, unknown>) : {};
  const command = str(a.command);
  if (command !== undefined) return `$ ${command}`;
  const p = path ?? str(a.path);
  if (p !== undefined) return p;
  if (name === 'execute_task' || name === 'execute_subtask') return `${str(a.agent_id) ?? ''}: ${str(a.prompt) ?? ''}`;
  for (const k of ['title', 'query', 'pattern', 'key']) {
    const v = str(a[k]);
    if (v !== undefined) return v;
  }
  const keys = Object.keys(a);
  if (keys.length === 0) return '';
  return JSON.stringify(a);
}

/** The first lines of a text, at most `max`, and a count of what was left out. */
export function head(text: string, max: number): string[] {
  const lines = text.replace(/\n$/, '').split('\n');
  if (lines.length <= max) return lines;
  return [...lines.slice(0, max), `… ${lines.length - max} more lines`];
}

/** A file write as a unified diff (without the file header), coloured by line; a new file shows as added lines. */
export function diffLines(oldContent: string | undefined, newContent: string, max = MAX_SHOWN_LINES): Line[] {
  const patch = structuredPatch('a', 'b', oldContent ?? '', newContent, '', '', { context: 3 });
  const out: Line[] = [];
  for (const h of patch.hunks) {
    out.push([{ text: `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`, color: 'cyan' }]);
    for (const l of h.lines) {
      if (l.startsWith('\\')) continue;
      out.push([{ text: l, color: l.startsWith('+') ? 'green' : l.startsWith('-') ? 'red' : undefined }]);
    }
  }
  if (out.length === 0) return [[{ text: '(no change)', dim: true }]];
  if (out.length <= max) return out;
  return [...out.slice(0, max), [{ text: `… ${out.length - max} more lines of the diff`, dim: true }]];
}

/** A line as plain text (what a test or a screen reader sees). */
export function plain(l: Line): string {
  return l.map((s) => s.text).join('');
}
