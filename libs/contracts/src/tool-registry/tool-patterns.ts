import { StoredText } from '../common';
import { TOOL_CATEGORIES, type ToolAccess, type ToolCategory } from './define-tool';
import { BUILTIN_TOOLS, LOOP_TOOLS, SYNTHETIC_TOOLS } from './registry';

/**
 * The one language that names tools, in approval rules (`tool_pattern`) and in agents' tool filters
 * (`meta.json` `tools.allow` / `tools.deny`). A pattern, surrounding blanks ignored, is:
 *
 * - `*`: every tool;
 * - a tool name (`[A-Za-z0-9_.:-]+`): that tool;
 * - a glob (those characters and `*`, at least one `*`): every name it matches as a whole, `*`
 *   standing for any run of characters (`mcp__github__*`, `*_file`);
 * - a group (`@fs_write`): every tool the registry puts in it — `TOOL_GROUPS` says which.
 *
 * Anything else is malformed. The groups are derived from the registry, so a tool added there is
 * in its groups without a rule or an agent being edited.
 */

/** The groups and what each holds (every membership is derived from the registry). */
export const TOOL_GROUP_DESCRIPTIONS = {
  '@fs_read': 'the file tools that only read',
  '@fs_write': 'the file tools that write a file',
  '@fs_any': 'every file tool (`@fs_read` and `@fs_write`)',
  '@read_only': 'every built-in or loop tool that changes neither the workspace, memory nor the world',
  '@filesystem': 'the tools of category filesystem',
  '@shell': 'the tools of category shell',
  '@web': "the tools that reach the web from the tool runner (judged by the URL's domain form `web:<host>`)",
  '@mcp': 'every MCP tool (`mcp__<server>__<tool>`)',
  '@agents': 'the tools that delegate to another agent',
  '@plumbing': "the tools of the loop's own bookkeeping",
  '@system': 'the synthetic tools of the system',
  '@dynamic': 'every tool the registry does not know and that is no MCP tool',
} as const satisfies Record<`@${string}`, string> & Record<`@${ToolCategory}`, string>;
export type ToolGroup = keyof typeof TOOL_GROUP_DESCRIPTIONS;
export const TOOL_GROUPS = Object.keys(TOOL_GROUP_DESCRIPTIONS) as ToolGroup[];

/** A tool pattern, parsed. */
export type ToolPattern =
  | { kind: 'any' }
  | { kind: 'name'; name: string }
  | { kind: 'glob'; glob: string }
  | { kind: 'group'; group: ToolGroup };

const TOOL_NAME = /^[A-Za-z0-9_.:-]+$/;
const TOOL_GLOB = /^[A-Za-z0-9_.:*-]+$/;

/** What the 400 of a malformed pattern says is accepted. */
export const TOOL_PATTERN_FORMS =
  'a tool pattern is "*", a tool name (read_file), a glob with * (mcp__github__*), or a group: ' +
  TOOL_GROUPS.join(', ');

export class ToolPatternError extends Error {
  constructor(
    readonly pattern: string,
    readonly problem: string,
  ) {
    super(`${problem}; ${TOOL_PATTERN_FORMS}`);
    this.name = 'ToolPatternError';
  }
}

const isGroup = (p: string): p is ToolGroup => Object.prototype.hasOwnProperty.call(TOOL_GROUP_DESCRIPTIONS, p);

/** Parses a pattern; a malformed one throws `ToolPatternError` (its message lists the accepted forms). */
export function parseToolPattern(pattern: string): ToolPattern {
  const p = pattern.trim();
  if (p === '*') return { kind: 'any' };
  if (p.startsWith('@')) {
    if (isGroup(p)) return { kind: 'group', group: p };
    throw new ToolPatternError(p, `unknown tool group ${p}`);
  }
  if (p.includes('*')) {
    if (!TOOL_GLOB.test(p)) throw new ToolPatternError(p, `invalid tool pattern ${p}`);
    return { kind: 'glob', glob: p };
  }
  if (!TOOL_NAME.test(p)) throw new ToolPatternError(p, `invalid tool name ${p}`);
  return { kind: 'name', name: p };
}

/** Why `pattern` is malformed, or null. */
export function toolPatternProblem(pattern: string): string | null {
  try {
    parseToolPattern(pattern);
    return null;
  } catch (e) {
    if (e instanceof ToolPatternError) return e.message;
    throw e;
  }
}

// ---------------------------------------------------------------- the groups, from the registry

/** What the groups are derived from: the registry's tools (a test passes one with a tool more). */
export interface ToolGroupSource {
  builtin: ReadonlyArray<{ name: string; category: ToolCategory; access: ToolAccess; writesFile: boolean }>;
  loop: ReadonlyArray<{ name: string; category: ToolCategory; access: ToolAccess }>;
  synthetic: ReadonlyArray<{ name: string; category: ToolCategory }>;
}

export const REGISTRY_TOOLS: ToolGroupSource = { builtin: BUILTIN_TOOLS, loop: LOOP_TOOLS, synthetic: SYNTHETIC_TOOLS };

/** Each group as a membership test, derived once per source. */
export type ToolGroups = Readonly<Record<ToolGroup, (name: string) => boolean>>;

export function toolGroups(source: ToolGroupSource): ToolGroups {
  const set = (names: Iterable<string>): ((n: string) => boolean) => {
    const s = new Set(names);
    return (n) => s.has(n);
  };
  const { builtin, loop, synthetic } = source;
  const fsRead = builtin.filter((t) => t.category === 'filesystem' && t.access === 'read').map((t) => t.name);
  const fsWrite = builtin.filter((t) => t.writesFile).map((t) => t.name);
  const known = new Map<string, ToolCategory>([...synthetic, ...loop, ...builtin].map((t) => [t.name, t.category]));
  const categoryOf = (n: string): ToolCategory => known.get(n) ?? (n.startsWith('mcp__') ? 'mcp' : 'dynamic');
  const byCategory = Object.fromEntries(
    TOOL_CATEGORIES.map((c) => [`@${c}`, (n: string) => categoryOf(n) === c] as const),
  ) as Record<`@${ToolCategory}`, (name: string) => boolean>;
  return {
    '@fs_read': set(fsRead),
    '@fs_write': set(fsWrite),
    '@fs_any': set([...fsRead, ...fsWrite]),
    '@read_only': set([...builtin, ...loop].filter((t) => t.access === 'read').map((t) => t.name)),
    ...byCategory,
  };
}

/** The groups of the registry as it is. */
export const REGISTRY_GROUPS: ToolGroups = toolGroups(REGISTRY_TOOLS);

// ---------------------------------------------------------------- matching

/**
 * `*` any run of characters, everything else itself, matched against the whole value: the literals
 * between the stars are found leftmost, in order (a leftmost placement never prevents a match), so
 * a value is scanned a bounded number of times whatever the glob — the model supplies the value,
 * an admin or a user the glob, and no glob may backtrack.
 */
export interface GlobTest {
  test(value: string): boolean;
}

export function anyCharsGlob(pattern: string): GlobTest {
  const parts = pattern.split(/\*+/);
  if (parts.length === 1) return { test: (v) => v === pattern };
  const first = parts[0] ?? '';
  const last = parts[parts.length - 1] ?? '';
  const middle = parts.slice(1, -1).filter((p) => p !== '');
  return {
    test(v) {
      if (v.length < first.length + last.length || !v.startsWith(first) || !v.endsWith(last)) return false;
      const end = v.length - last.length;
      let pos = first.length;
      for (const m of middle) {
        const i = v.indexOf(m, pos);
        if (i === -1 || i + m.length > end) return false;
        pos = i + m.length;
      }
      return true;
    },
  };
}

/** The test of a parsed pattern against a tool name. */
export function toolPatternTest(pattern: ToolPattern, groups: ToolGroups = REGISTRY_GROUPS): (name: string) => boolean {
  switch (pattern.kind) {
    case 'any':
      return () => true;
    case 'name':
      return (n) => n === pattern.name;
    case 'glob': {
      const g = anyCharsGlob(pattern.glob);
      return (n) => g.test(n);
    }
    case 'group':
      return groups[pattern.group];
  }
}

/** Compiles a pattern; a malformed one throws `ToolPatternError`. */
export function compileToolPattern(pattern: string, groups: ToolGroups = REGISTRY_GROUPS): (name: string) => boolean {
  return toolPatternTest(parseToolPattern(pattern), groups);
}

/** An agent's tool filter as written: deny wins; an empty allow list allows every tool. */
export interface ToolFilterLists {
  allow: readonly string[];
  deny: readonly string[];
}

/** An agent's tool filter, compiled: whether a tool may be offered to the agent. */
export interface CompiledToolFilter {
  allows(name: string): boolean;
}

/**
 * Compiles an agent's filter. Writes are checked (`ToolPatternText`), but a stored row may hold an
 * entry that does not parse: it matches no tool (no tool name has the characters that make a
 * pattern malformed).
 */
export function compileToolFilter(filter: ToolFilterLists, groups: ToolGroups = REGISTRY_GROUPS): CompiledToolFilter {
  const compile = (patterns: readonly string[]): Array<(n: string) => boolean> =>
    patterns.flatMap((p) => (toolPatternProblem(p) === null ? [compileToolPattern(p, groups)] : []));
  const allow = compile(filter.allow);
  const deny = compile(filter.deny);
  const allowAll = filter.allow.length === 0;
  return {
    allows: (name) => !deny.some((m) => m(name)) && (allowAll || allow.some((m) => m(name))),
  };
}

/** A tool pattern as an API accepts it: at most `max` characters, well formed. */
export const ToolPatternText = (max: number) =>
  StoredText(max)
    .min(1)
    .superRefine((p, ctx) => {
      const problem = toolPatternProblem(p);
      if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
    });
