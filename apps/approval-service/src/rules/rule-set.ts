import { posix } from 'node:path';
import { compileToolPattern as compileSharedToolPattern, ToolPatternError, WEB_DOMAIN_PREFIX } from '@skald/contracts';
import { CommandPattern, compileCommandWords, patternWords } from './command-match';
import { scopesOf, type GateInput, type RuleAction, type RuleRow } from './gate-input';
import { isMemoryPath, WORKSPACE } from './gate-paths';
import { anyCharsGlob, pathGlob } from './rule-glob';

// Rules compiled once into matchers, and the rule set the gate evaluates: its order per security
// group and its memo of tool visibility.

export interface CompiledRule {
  id: string;
  action: RuleAction;
  priority: number;
  ord: number;
  securityGroup: string | null;
  agentId: string | null;
  source: string | null;
  tool: (name: string) => boolean;
  path: ((p: string) => boolean) | null;
  command: CommandPattern | null;
  /** Why the rule failed to load: it then means Require wherever it could apply. */
  broken: string | null;
  /** How a decision names it (built once: a decision only reads it). */
  description: string;
}

export class RuleCompileError extends Error {
  constructor(
    readonly field: 'tool_pattern' | 'path_pattern' | 'command_pattern' | 'action',
    message: string,
  ) {
    super(message);
    this.name = 'RuleCompileError';
  }
}

/** The tool patterns of libs/contracts (`*`, a name, a glob, a registry group), as a rule's field. */
export function compileToolPattern(pattern: string): (name: string) => boolean {
  try {
    return compileSharedToolPattern(pattern);
  } catch (e) {
    if (e instanceof ToolPatternError) throw new RuleCompileError('tool_pattern', e.message);
    throw e;
  }
}

/** A domain pattern's host part: the characters of a host name as the URL parser writes it, and `*`. */
const DOMAIN_PATTERN = /^[a-z0-9.*_\-[\]:]{1,253}$/;

/**
 * `*` alone: any path; `dir/*`: dir and its whole subtree; otherwise `*` within a segment, `**` across.
 * `web:<host glob>` judges a web tool's URL by its domain form (`web:*.python.org`): it never
 * matches a file, and a file pattern never matches a domain form.
 */
export function compilePathPattern(pattern: string): (path: string) => boolean {
  const p = pattern.trim();
  if (p === '*' || p === '**') return () => true;
  if (p.length === 0 || p.includes('\0')) throw new RuleCompileError('path_pattern', 'empty path pattern');
  if (p.toLowerCase().startsWith(WEB_DOMAIN_PREFIX)) {
    const host = p.slice(WEB_DOMAIN_PREFIX.length).toLowerCase();
    if (!DOMAIN_PATTERN.test(host))
      throw new RuleCompileError('path_pattern', `domain pattern ${p}: web: and a host name, * any characters`);
    const glob = anyCharsGlob(host);
    return (value) => value.startsWith(WEB_DOMAIN_PREFIX) && glob.test(value.slice(WEB_DOMAIN_PREFIX.length));
  }
  if (p.split('/').includes('..')) throw new RuleCompileError('path_pattern', `".." in path pattern ${p}`);
  const anchored = isMemoryPath(p) || p.startsWith('/') ? p : `${WORKSPACE}/${p}`;
  if (anchored.endsWith('/*') && !anchored.slice(0, -2).includes('*')) {
    const dir = posix.normalize(anchored.slice(0, -2)).replace(/\/+$/, '') || '/';
    return (path) => path === dir || path.startsWith(dir === '/' ? '/' : `${dir}/`);
  }
  const re = pathGlob(posix.normalize(anchored));
  return (path) => re.test(path);
}

/**
 * `git status` matches every command whose argv starts with `git status`; a `*` word matches any
 * one word, or as the last word any rest; a word with `*` inside is a glob within that word.
 * Deny and require rules also match through wrappers, by base name, with flags normalised.
 */
export function compileCommandPattern(pattern: string): CommandPattern {
  const words = patternWords(pattern);
  if (typeof words === 'string')
    throw new RuleCompileError('command_pattern', `command pattern does not parse: ${words}`);
  return compileCommandWords(words);
}

/** Never throws: a rule that fails to compile is kept, marked broken. */
export function compileRule(row: RuleRow): CompiledRule {
  let action: RuleAction = 'require';
  let tool: (n: string) => boolean = () => true;
  let path: CompiledRule['path'] = null;
  let command: CompiledRule['command'] = null;
  let broken: string | null = null;
  try {
    if (row.action !== 'allow' && row.action !== 'deny' && row.action !== 'require')
      throw new RuleCompileError('action', `unknown action ${row.action}`);
    action = row.action;
    tool = compileToolPattern(row.toolPattern);
    path = row.pathPattern ? compilePathPattern(row.pathPattern) : null;
    command = row.commandPattern ? compileCommandPattern(row.commandPattern) : null;
  } catch (e) {
    broken = e instanceof Error ? e.message : String(e);
    action = 'require';
    path = null;
    command = null;
    try {
      tool = compileToolPattern(row.toolPattern);
    } catch {
      tool = () => true; // a broken tool pattern could match anything
    }
  }
  // One literal with every field in one order: every rule has the same shape (fast property access).
  return {
    id: row.id,
    action,
    priority: row.priority,
    ord: row.ord,
    securityGroup: row.securityGroup,
    agentId: row.agentId,
    source: row.source,
    tool,
    path,
    command,
    broken,
    description: broken
      ? `rule “${row.name}” failed to load (${broken}): asking`
      : `rule “${row.name}” (${action}, priority ${row.priority})`,
  };
}

/** Throws RuleCompileError naming the field: for validating a rule before it is stored. */
export function validateRule(row: Omit<RuleRow, 'id' | 'ord' | 'name'>): void {
  if (row.action !== 'allow' && row.action !== 'deny' && row.action !== 'require')
    throw new RuleCompileError('action', `unknown action ${row.action}`);
  compileToolPattern(row.toolPattern);
  if (row.pathPattern) compilePathPattern(row.pathPattern);
  if (row.commandPattern) compileCommandPattern(row.commandPattern);
}

/** Visibility answers a rule set remembers at most (then it forgets them all and starts again). */
const VISIBLE_MEMO_MAX = 10_000;

/** The parts of a visibility question besides the tool. */
export type VisibilityContext = Pick<GateInput, 'agentId' | 'source' | 'securityGroup' | 'securityGroups'>;

/** The compiled rule set, with the evaluation order per security group computed once. */
export class RuleSet {
  private readonly rules: CompiledRule[];
  private readonly byGroup = new Map<string, CompiledRule[]>();
  /**
   * `isVisible` answers by question context, then by tool: a rule set never changes, and a turn asks
   * the same tools every time.
   */
  private readonly visibleMemo = new Map<string, Map<string, boolean>>();
  private visibleCount = 0;
  /** Whether some rule names an agent, a source, a security group (see `visibleKey`). */
  private readonly named: { agent: boolean; source: boolean; group: boolean };

  constructor(rows: readonly RuleRow[]) {
    this.rules = rows.map(compileRule).sort((a, b) => a.priority - b.priority || a.ord - b.ord);
    this.named = {
      agent: this.rules.some((r) => r.agentId !== null),
      source: this.rules.some((r) => r.source !== null),
      group: this.rules.some((r) => r.securityGroup !== null),
    };
  }

  get size(): number {
    return this.rules.length;
  }

  /** Visibility answers remembered (for specs). */
  get visibleMemoSize(): number {
    return this.visibleCount;
  }

  /**
   * The rules of the session's security groups first (`scopesOf`: its own and its owner's groups',
   * together in priority order), then the default (group-less) ones; other groups never apply.
   */
  ordered(ctx: Pick<GateInput, 'securityGroup' | 'securityGroups'>): readonly CompiledRule[] {
    const scopes = scopesOf(ctx);
    const key = groupsKey(scopes);
    let list = this.byGroup.get(key);
    if (!list) {
      const own = this.rules.filter((r) => r.securityGroup !== null && scopes.includes(r.securityGroup));
      list = [...own, ...this.rules.filter((r) => r.securityGroup === null)];
      if (this.byGroup.size >= VISIBLE_MEMO_MAX) this.byGroup.clear();
      this.byGroup.set(key, list);
    }
    return list;
  }

  /** The remembered answers of one question context: tool → visible. */
  visibleAnswers(ctx: VisibilityContext): Map<string, boolean> {
    const key = this.visibleKey(ctx);
    let answers = this.visibleMemo.get(key);
    if (!answers) {
      answers = new Map();
      this.visibleMemo.set(key, answers);
    }
    return answers;
  }

  /** Remembers an answer in `answers` (from `visibleAnswers`), forgetting everything past the bound. */
  rememberVisible(answers: Map<string, boolean>, tool: string, answer: boolean): void {
    if (this.visibleCount >= VISIBLE_MEMO_MAX) {
      for (const m of this.visibleMemo.values()) m.clear();
      this.visibleCount = 0;
    }
    answers.set(tool, answer);
    this.visibleCount++;
  }

  /**
   * The memo key of a question context: only the parts that some rule of this set names, since a
   * part no rule names cannot change an answer (`appliesTo` compares a rule's agent and source only
   * when it has one; `ordered` differs by group only for a group some rule names). Most rule sets
   * name none, so every agent and source of a group shares one memo. Length-prefixed, so that no two
   * contexts share a key whatever their strings contain.
   */
  private visibleKey(ctx: VisibilityContext): string {
    const { agent, source, group } = this.named;
    let key = '';
    if (group) key += `${groupsKey(scopesOf(ctx))}|`;
    if (agent) key += `${ctx.agentId.length}:${ctx.agentId}|`;
    if (source) key += `${ctx.source.length}:${ctx.source}|`;
    return key;
  }
}

/** A key of a list of security groups, length-prefixed so that no two lists share one. */
function groupsKey(scopes: readonly string[]): string {
  return scopes.map((g) => `${g.length}:${g}`).join(',');
}
