import fc from 'fast-check';
import { describeZodError } from '../common';
import { AgentMeta, PutAgentRequest, StoredAgentMeta } from '../agents';
import { defineTool, EVERYWHERE, TOOL_CATEGORIES } from './define-tool';
import { BUILTIN_TOOLS, FS_READ_TOOLS, FS_WRITE_TOOLS, LOOP_TOOLS, SYNTHETIC_TOOLS } from './registry';
import { z } from 'zod';
import {
  anyCharsGlob,
  compileToolFilter,
  compileToolPattern,
  REGISTRY_TOOLS,
  TOOL_GROUPS,
  toolGroups,
  toolPatternProblem,
  ToolPatternError,
} from './tool-patterns';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = { seed: SEED, numRuns: 3000 };

// ---------------------------------------------------------------- the reference semantics

/**
 * What a pattern means, stated without the implementation: trimmed; `*` every name; `@g` a known
 * group, its members read off the registry arrays; a pattern of `[A-Za-z0-9_.:*-]` with a `*` the
 * whole-name RegExp with `.*` for each `*`; one of `[A-Za-z0-9_.:-]` that name; anything else
 * malformed (`null`).
 */
function reference(pattern: string): ((name: string) => boolean) | null {
  const p = pattern.trim();
  if (p === '*') return () => true;
  if (p.startsWith('@')) return referenceGroup(p);
  if (/^[A-Za-z0-9_.:*-]+$/.test(p) && p.includes('*')) {
    const re = new RegExp(`^${p.split('*').map(escapeRegExp).join('.*')}$`, 's');
    return (n) => re.test(n);
  }
  if (/^[A-Za-z0-9_.:-]+$/.test(p)) return (n) => n === p;
  return null;
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function referenceGroup(g: string): ((name: string) => boolean) | null {
  const builtin = (f: (t: (typeof BUILTIN_TOOLS)[number]) => boolean) => (n: string) =>
    BUILTIN_TOOLS.some((t) => t.name === n && f(t));
  const categoryOf = (n: string): string =>
    [...BUILTIN_TOOLS, ...LOOP_TOOLS, ...SYNTHETIC_TOOLS].find((t) => t.name === n)?.category ??
    (n.startsWith('mcp__') ? 'mcp' : 'dynamic');
  if (g === '@fs_read') return builtin((t) => t.category === 'filesystem' && t.access === 'read');
  if (g === '@fs_write') return builtin((t) => t.category === 'filesystem' && t.access === 'write');
  if (g === '@fs_any') return builtin((t) => t.category === 'filesystem');
  if (g === '@read_only')
    return (n) => [...BUILTIN_TOOLS, ...LOOP_TOOLS].some((t) => t.name === n && t.access === 'read');
  const category = TOOL_CATEGORIES.find((c) => `@${c}` === g);
  return category ? (n) => categoryOf(n) === category : null;
}

// ---------------------------------------------------------------- the old matchers (kept here only)

/** The approval rules' tool pattern before the shared language (rule-engine.ts). */
function oldRulePattern(pattern: string): (name: string) => boolean {
  const p = pattern.trim();
  if (p === '*') return () => true;
  if (p === '@fs_read') return (n) => FS_READ_TOOLS.includes(n);
  if (p === '@fs_write') return (n) => FS_WRITE_TOOLS.includes(n);
  if (p === '@fs_any') return (n) => FS_READ_TOOLS.includes(n) || FS_WRITE_TOOLS.includes(n);
  if (p.startsWith('@')) throw new Error(`unknown tool group ${p}`);
  if (p.includes('*')) {
    if (!/^[A-Za-z0-9_.:*-]+$/.test(p)) throw new Error(`invalid tool pattern ${p}`);
    if (p.endsWith('*') && !p.slice(0, -1).includes('*')) {
      const prefix = p.slice(0, -1);
      return (n) => n.startsWith(prefix);
    }
    const re = anyCharsGlob(p);
    return (n) => re.test(n);
  }
  if (!/^[A-Za-z0-9_.:-]+$/.test(p)) throw new Error(`invalid tool name ${p}`);
  return (n) => n === p;
}

/** An agent filter's pattern before the shared language (libs/agent-loop history.ts). */
const oldAgentMatches = (pattern: string, name: string): boolean =>
  pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : pattern === name;

function oldAgentAllows(tools: { allow: string[]; deny: string[] }, name: string): boolean {
  if (tools.deny.some((p) => oldAgentMatches(p, name))) return false;
  return tools.allow.length === 0 || tools.allow.some((p) => oldAgentMatches(p, name));
}

// ---------------------------------------------------------------- generators

const throws = (f: () => unknown): boolean => {
  try {
    f();
    return false;
  } catch (e) {
    return e instanceof ToolPatternError;
  }
};

const REAL_NAMES = [
  ...BUILTIN_TOOLS.map((t) => t.name),
  ...LOOP_TOOLS.map((t) => t.name),
  ...SYNTHETIC_TOOLS.map((t) => t.name),
  'mcp__gh__issues',
  'mcp__fs__read_file',
  'lab_tool',
];
/** A small alphabet, so that generated patterns and names meet often. */
const word = (chars: string[], maxLength = 8) => fc.string({ unit: fc.constantFrom(...chars), maxLength });
const NAME_CHARS = ['a', 'b', '_', 'r', 'e'];
/** A name as the model APIs accept it (`[A-Za-z0-9_-]`): what an agent filter meets. */
const toolName = fc.oneof(
  fc.constantFrom(...REAL_NAMES),
  word(NAME_CHARS).filter((s) => s.length > 0),
);
/** Any value a rule meets (the gate judges any name a call carries). */
const anyName = fc.oneof(toolName, word([...NAME_CHARS, '*', '.', ':', ' ', '@', '/', 'é']));
const pattern = fc.oneof(
  fc.constantFrom(...TOOL_GROUPS, '@nope', '@', '*', '**', ' read_file ', 'mcp__*', '*_file', 'read_*_x'),
  word([...NAME_CHARS, '*', '-', '.', ':']),
  word([...NAME_CHARS, '*', ' ', '@', '/', 'é', '\t']),
  fc.constantFrom(...REAL_NAMES).chain((n) => fc.nat(n.length).map((i) => `${n.slice(0, i)}*`)),
);

// ---------------------------------------------------------------- the properties

describe('tool patterns: one language for approval rules and agent filters', () => {
  beforeAll(() => console.log(`tool pattern property seed ${SEED} (replay: FC_SEED=${SEED})`));

  it('agree with the reference semantics: malformed exactly when it says, matching exactly what it matches', () => {
    let matched = 0;
    let malformed = 0;
    fc.assert(
      fc.property(pattern, fc.array(anyName, { maxLength: 6 }), (p, names) => {
        const ref = reference(p);
        if (ref === null) {
          malformed++;
          return toolPatternProblem(p) !== null && throws(() => compileToolPattern(p));
        }
        if (toolPatternProblem(p) !== null) return false;
        const m = compileToolPattern(p);
        return [...names, ...REAL_NAMES].every((n) => {
          if (ref(n)) matched++;
          return m(n) === ref(n);
        });
      }),
      RUNS,
    );
    // A property that never meets a match or a malformed pattern proves nothing.
    expect(matched).toBeGreaterThan(1000);
    expect(malformed).toBeGreaterThan(100);
  });

  it('every approval rule the old matcher compiled matches the same names; only the new groups compile where it refused', () => {
    let compared = 0;
    fc.assert(
      fc.property(pattern, fc.array(anyName, { maxLength: 6 }), (p, names) => {
        let old: ((n: string) => boolean) | null = null;
        try {
          old = oldRulePattern(p);
        } catch {
          old = null;
        }
        if (old === null) {
          const isNewGroup = TOOL_GROUPS.includes(p.trim() as never) && !p.trim().startsWith('@fs_');
          return isNewGroup || throws(() => compileToolPattern(p));
        }
        const now = compileToolPattern(p);
        return [...names, ...REAL_NAMES].every((n) => {
          compared++;
          return now(n) === old(n);
        });
      }),
      RUNS,
    );
    expect(compared).toBeGreaterThan(10_000);
  });

  it('every agent filter pattern that matched a tool still matches it; names and prefix* match exactly as before', () => {
    let kept = 0;
    fc.assert(
      fc.property(pattern, fc.array(toolName, { maxLength: 6 }), (p, names) => {
        const filter = compileToolFilter({ allow: [p], deny: [] });
        const oldLanguage = /^[A-Za-z0-9_.:-]*\*?$/.test(p) && p !== '';
        return [...names, ...REAL_NAMES].every((n) => {
          const now = filter.allows(n);
          const old = oldAgentMatches(p, n);
          if (old) kept++;
          return (!old || now) && (!oldLanguage || now === old);
        });
      }),
      RUNS,
    );
    expect(kept).toBeGreaterThan(1000);
  });

  it('filters written in the old language (names, prefix*) allow exactly the tools they allowed', () => {
    const oldPattern = fc.oneof(
      fc.constantFrom(...REAL_NAMES),
      fc.constantFrom(...REAL_NAMES).chain((n) => fc.nat(n.length).map((i) => `${n.slice(0, i)}*`)),
      word(NAME_CHARS).filter((s) => s.length > 0),
    );
    const filter = fc.record({
      allow: fc.array(oldPattern, { maxLength: 3 }),
      deny: fc.array(oldPattern, { maxLength: 3 }),
    });
    fc.assert(
      fc.property(filter, fc.array(toolName, { maxLength: 8 }), (f, names) => {
        const now = compileToolFilter(f);
        return [...names, ...REAL_NAMES].every((n) => now.allows(n) === oldAgentAllows(f, n));
      }),
      RUNS,
    );
  });

  it('a stored filter entry that is malformed now matches no tool; the rest of the filter still applies', () => {
    const f = compileToolFilter({ allow: ['read file', 'list_*'], deny: ['@nope', 'list_agents'] });
    expect(REAL_NAMES.filter((n) => f.allows(n))).toEqual(['list_files']);
    expect(REAL_NAMES.filter((n) => compileToolFilter({ allow: ['@nope'], deny: [] }).allows(n))).toEqual([]);
  });
});

describe('tool groups: derived from the registry', () => {
  const members = (g: (typeof TOOL_GROUPS)[number]) => REAL_NAMES.filter((n) => compileToolPattern(g)(n));

  it('there is a group for each tool category', () => {
    for (const c of TOOL_CATEGORIES) expect(TOOL_GROUPS).toContain(`@${c}`);
  });

  it('hold the tools of the registry as it is', () => {
    expect(members('@fs_write')).toEqual([...FS_WRITE_TOOLS]);
    expect(members('@fs_read')).toEqual([...FS_READ_TOOLS]);
    expect(members('@read_only')).toEqual([
      'list_files',
      'read_file',
      'search_file',
      'grep_files',
      'memory_search',
      'open_file',
      'update_scratchpad',
      'write_todos',
      'ask_user_clarification',
      'list_agents',
    ]);
    expect(members('@shell')).toEqual(['execute_cmd']);
    expect(members('@agents')).toEqual(['execute_task', 'execute_subtask']);
    expect(members('@mcp')).toEqual(['mcp__gh__issues', 'mcp__fs__read_file']);
    expect(members('@dynamic')).toEqual(['lab_tool']);
    expect(members('@system')).toEqual(SYNTHETIC_TOOLS.map((t) => t.name));
  });

  it('a tool added to the registry is in its groups at once', () => {
    const fileTool = <const N extends string, const W extends 'read' | 'write'>(name: N, access: W) =>
      defineTool({
        name,
        description: `${name}, for the test`,
        args: z.object({ path: z.string() }),
        category: 'filesystem',
        access,
        restartHint: 'reExecute',
        offeredAt: EVERYWHERE,
        defaultRule: 'require',
      });
    const chmodFile = fileTool('chmod_file', 'write');
    const statFile = fileTool('stat_file', 'read');
    const groups = toolGroups({ ...REGISTRY_TOOLS, builtin: [...BUILTIN_TOOLS, chmodFile, statFile] });
    for (const [g, chmod, stat] of [
      ['@fs_write', true, false],
      ['@fs_read', false, true],
      ['@fs_any', true, true],
      ['@read_only', false, true],
      ['@filesystem', true, true],
      ['@dynamic', false, false],
    ] as const) {
      expect([g, groups[g]('chmod_file'), groups[g]('stat_file')]).toEqual([g, chmod, stat]);
    }
  });
});

describe('tool patterns on write', () => {
  const put = (tools: unknown) => PutAgentRequest.safeParse({ meta: { tools } });

  it.each([
    ['@nope', 'unknown tool group @nope'],
    ['read file', 'invalid tool name read file'],
    ['mcp__a/*', 'invalid tool pattern mcp__a/*'],
    ['@', 'unknown tool group @'],
  ])('an agent filter entry %j is refused naming the field and the accepted forms', (entry, problem) => {
    const parsed = put({ allow: ['read_file'], deny: ['list_files', entry] });
    expect(parsed.success).toBe(false);
    const d = describeZodError(parsed.error!);
    expect(d.field).toBe('meta.tools.deny.1');
    expect(d.message).toContain(problem);
    expect(d.message).toContain('a tool name (read_file), a glob with * (mcp__github__*), or a group: @fs_read');
    expect(d.message).toContain('@read_only');
  });

  it('well-formed filters are accepted: names, globs, *, groups', () => {
    expect(put({ allow: ['@read_only', 'execute_cmd', 'mcp__github__*', '*'], deny: ['@fs_write'] }).success).toBe(
      true,
    );
  });

  it('a built-in meta.json is held to the language; a stored override is read as it was stored', () => {
    const meta = { name: 'X', type: 'task', tools: { allow: ['read file'], deny: [] } };
    expect(AgentMeta.safeParse(meta).success).toBe(false);
    expect(StoredAgentMeta.parse(meta).tools).toEqual({ allow: ['read file'], deny: [] });
  });
});
