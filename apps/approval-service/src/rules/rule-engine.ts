import { posix } from 'node:path';
import {
  BypassScope as BypassScopeSchema,
  BypassScope as ContractBypassScope,
  compileToolPattern as compileSharedToolPattern,
  effectiveCallPaths,
  FS_READ_TOOLS,
  FS_WRITE_TOOLS,
  parentDirectory,
  PATH_TOOLS,
  resolveToolPath,
  toolCategory,
  ToolPatternError,
} from '@skald/contracts';
import {
  CommandPattern,
  compileCommandWords,
  NormalisedCommand,
  patternWords,
  runsCodeReason,
  scanMatches,
  unallowableReason,
  whatRuns,
} from './command-match';
import { catalogueRisk, writesOrRuns } from './read-only-catalogue';
import { parseInvocation } from './programs';
import { readCommandLine } from './shell-commands';
import { analyzeCommand, scanSegments, SimpleCommand } from './shell-analysis';
import { pathGlob, RULE_PATH_MAX_CHARS } from './rule-glob';

/**
 * The approval gate as a pure function: rules (ordered by priority, then insertion; the session's
 * security group before the default one; first match wins; default closed), then the relaxations
 * of a Require (RunContext fast path, session bypass) and the auto-deny of headless sessions.
 * A Deny is final: nothing relaxes it.
 */

export type RuleAction = 'allow' | 'deny' | 'require';
export type GateBy = 'rule' | 'bypass' | 'run_context' | 'auto_deny' | 'policy';

/** A rule as stored. `action` is a string: a row with an unknown action fails to load. */
export interface RuleRow {
  id: string;
  toolPattern: string;
  pathPattern: string | null;
  commandPattern: string | null;
  agentId: string | null;
  source: string | null;
  securityGroup: string | null;
  action: string;
  priority: number;
  /** Insertion order: ties on priority are broken by it. */
  ord: number;
}

/** A session bypass's scope (contracts `BypassScope`): wide (`all`, a category, an MCP server) or narrow (one tool's command or directory). */
export type BypassScope = ContractBypassScope;

export interface RunContext {
  /** The base of relative paths (with the call's `workdir` argument), as in the tool runner. */
  workingDirectory?: string | null;
  allowFsReads?: readonly string[];
  allowFsWrites?: readonly string[];
}

export interface GateInput {
  toolName: string;
  arguments: Record<string, unknown>;
  agentId: string;
  source: string;
  securityGroup?: string;
  /** The session belongs to an admin (shared memory is writable from an admin's session only). */
  isAdmin: boolean;
  runContext?: RunContext;
  /** Active bypasses of the session. */
  bypasses?: readonly BypassScope[];
  /** Headless session (`auto_deny_approvals`): a Require is rejected without asking. */
  autoDeny?: boolean;
  /**
   * Where the call's paths land (`approval.check` `landing`, from the tool runner's `tools.resolve`),
   * in the order of `callPaths`; a missing or null entry is a landing nobody could resolve. Judged
   * with the lexical path for the tools whose files the runner owns (file tools, `execute_cmd`'s
   * directory): a deny on either denies, an allow needs both. Undefined: the lexical path alone (the
   * rules tester; the service sends `[]` for a check that carried none, so nothing allows by path).
   */
  landing?: ReadonlyArray<string | null>;
}

export interface GateResult {
  decision: RuleAction;
  ruleId?: string;
  reason: string;
  by: GateBy;
  /** The shell line could not be read as simple commands: only a human may allow it (no bypass). */
  needsHuman?: boolean;
}

/** `@fs_read` / `@fs_write`: derived from the tool registry (libs/contracts). */
export { FS_READ_TOOLS, FS_WRITE_TOOLS };
export const WORKSPACE = '/workspace';
const MEMORY_ROOTS = ['user-memory', 'shared-memory'];

// ---------------------------------------------------------------- compiling rules

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

/** `*` alone: any path; `dir/*`: dir and its whole subtree; otherwise `*` within a segment, `**` across. */
export function compilePathPattern(pattern: string): (path: string) => boolean {
  const p = pattern.trim();
  if (p === '*' || p === '**') return () => true;
  if (p.length === 0 || p.includes('\0')) throw new RuleCompileError('path_pattern', 'empty path pattern');
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
      ? `rule ${row.id} failed to load (${broken}): asking`
      : `rule ${row.id} (${action}, priority ${row.priority})`,
  };
}

/** Throws RuleCompileError naming the field: for validating a rule before it is stored. */
export function validateRule(row: Omit<RuleRow, 'id' | 'ord'>): void {
  if (row.action !== 'allow' && row.action !== 'deny' && row.action !== 'require')
    throw new RuleCompileError('action', `unknown action ${row.action}`);
  compileToolPattern(row.toolPattern);
  if (row.pathPattern) compilePathPattern(row.pathPattern);
  if (row.commandPattern) compileCommandPattern(row.commandPattern);
}

/** Visibility answers a rule set remembers at most (then it forgets them all and starts again). */
const VISIBLE_MEMO_MAX = 10_000;

/** The parts of a visibility question besides the tool. */
export type VisibilityContext = Pick<GateInput, 'agentId' | 'source' | 'securityGroup'>;

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

  /** The session's group's rules first, then the default (group-less) ones; other groups never apply. */
  ordered(securityGroup: string | undefined): readonly CompiledRule[] {
    const key = securityGroup ?? '';
    let list = this.byGroup.get(key);
    if (!list) {
      const own = securityGroup ? this.rules.filter((r) => r.securityGroup === securityGroup) : [];
      list = [...own, ...this.rules.filter((r) => r.securityGroup === null)];
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
    if (group) key += ctx.securityGroup === undefined ? '-|' : `${ctx.securityGroup.length}:${ctx.securityGroup}|`;
    if (agent) key += `${ctx.agentId.length}:${ctx.agentId}|`;
    if (source) key += `${ctx.source.length}:${ctx.source}|`;
    return key;
  }
}

// ---------------------------------------------------------------- paths

export function isMemoryPath(p: string): boolean {
  return MEMORY_ROOTS.some((root) => p === root || p.startsWith(`${root}/`));
}

/**
 * The lexically normalised path a path argument names, by the shared resolver the tool runner
 * uses (`@skald/contracts` tool-paths): memory paths stay relative (`user-memory/notes.md`),
 * everything else is absolute inside `/workspace`. Null for a path the runner refuses (outside the
 * workspace, a memory root climbed out of, NUL, longer than PATH_MAX): it matches no path rule.
 */
export function normalisePath(raw: string, workingDirectory: string = WORKSPACE): string | null {
  if (raw.length > RULE_PATH_MAX_CHARS) return null;
  const r = resolveToolPath(raw, {}, workingDirectory);
  return r.ok ? r.value.virtual : null;
}

/**
 * The effective paths of a call, exactly as the tool runner resolves them: file tools' `path`
 * against the `workdir` argument or the session's working directory, `execute_cmd`'s working
 * directory. Any other tool with a string `path` argument is judged by that path resolved the
 * same way. Null entries are paths the runner refuses.
 */
export function callPaths(input: GateInput): Array<string | null> {
  const wd = input.runContext?.workingDirectory ?? null;
  const args = input.arguments;
  const known = PATH_TOOLS.includes(input.toolName) || input.toolName === 'execute_cmd';
  const resolved = known
    ? effectiveCallPaths(input.toolName, args, wd)
    : typeof args.path === 'string' && args.path.length > 0
      ? [resolveToolPath(args.path, args, wd)]
      : [];
  return resolved.map((r) => (r.ok ? r.value.virtual : null));
}

/** The file tools' targets (not `execute_cmd`'s directory): what path rules and the fast path judge. */
function filePaths(input: GateInput): Array<string | null> {
  return input.toolName === 'execute_cmd' ? [] : callPaths(input);
}

/**
 * Where the paths of `callPaths` land (see `GateInput.landing`), one entry each, normalised like a
 * lexical path (null: unknown or refused). Null when the call is judged on its lexical paths alone:
 * no landing was given, or the tool's paths are not files the runner resolves (an MCP tool's `path`).
 */
export function landingPaths(input: GateInput): Array<string | null> | null {
  if (input.landing === undefined) return null;
  if (input.toolName !== 'execute_cmd' && !PATH_TOOLS.includes(input.toolName)) return null;
  const given = input.landing;
  return callPaths(input).map((lexical, i) => {
    // A memory document is a row, not a file: it lands where it is named.
    if (lexical !== null && isMemoryPath(lexical)) return lexical;
    const raw = given[i];
    return typeof raw === 'string' ? normalisePath(raw, WORKSPACE) : null;
  });
}

/** The landing of the file tools' targets (none for `execute_cmd`), or null: lexical alone. */
function fileLandings(input: GateInput): Array<string | null> | null {
  return input.toolName === 'execute_cmd' ? null : landingPaths(input);
}

/** The directory a judged path lies in (as `parentDirectory` of the shared resolver). */
function parentOf(virtual: string): string {
  const r = resolveToolPath(virtual, {}, WORKSPACE);
  return r.ok ? parentDirectory(r.value) : '';
}

// ---------------------------------------------------------------- categories

/** A tool's category: from the registry (built-in, the loop's own, synthetic), `mcp`, else `dynamic`. */
export { toolCategory };

/** `mcp__<server>__<tool>` → server. */
export function mcpServerOf(name: string): string | null {
  const m = /^mcp__(.+?)__./.exec(name);
  return m ? m[1] : null;
}

/**
 * What a narrow session approval of a command names: its program (argv[0] as written), its
 * subcommand (the first word that is neither an option nor an option's value, by the program
 * table: `git -C . status` → `status`), and its option shape (the set of its options' normalised
 * names, values left out: `sed -n 1p f` → [`-n`]; `--expression=x` → `--expression`, folded onto
 * `-e` where the table says). `ambiguous`: the subcommand word follows an option whose arity the
 * table does not know (an unknown program's `-x word`), so it may be that option's value.
 */
export function commandKey(argv: readonly string[]): {
  program: string;
  subcommand: string | null;
  options: string[];
  ambiguous: boolean;
} {
  const inv = parseInvocation(argv);
  return {
    program: argv[0] ?? '',
    subcommand: inv.positional[0] ?? null,
    options: [...new Set(inv.options.map((o) => o.name))].sort(),
    ambiguous: inv.positional.length > 0 && inv.ambiguous.has(0),
  };
}

/** Why no narrow session approval may name or cover this command, or null. */
function notNarrowable(argv: readonly string[]): string | null {
  const risk = catalogueRisk(argv);
  if (risk === 'writes' || risk === 'runs') return `${argv[0]}: ${writesOrRuns(argv) ?? risk}`;
  if (commandKey(argv).ambiguous) return `${argv[0]}: its subcommand may be an option's value`;
  return null;
}

/** At most this many option names in one scope (the wire schema's bound). */
const MAX_SCOPE_OPTIONS = 64;

/**
 * The narrow scopes a human's "approve for this session" opens for this call: `execute_cmd` →
 * this tool with each command's program, subcommand and option shape (`git status -s` →
 * {execute_cmd, git, status, options: ["-s"]}); a file tool → this tool in this file's directory;
 * any other tool → this tool. Empty when the call cannot be narrowed (a line the gate cannot
 * read, a command the read-only catalogue says writes or runs code, a subcommand that may be an
 * option's value, a path the runner refuses): then no session approval is offered.
 */
export function narrowScopes(
  toolName: string,
  args: Readonly<Record<string, unknown>>,
  workingDirectory: string | null | undefined,
): BypassScope[] {
  // Every scope must be a valid wire scope (the inbox lists them): a call with a word or a name
  // the schema refuses (over-long, empty, odd characters) offers no session approval at all.
  const scopes = deriveScopes(toolName, args, workingDirectory);
  return scopes.every((sc) => BypassScopeSchema.safeParse(sc).success) ? scopes : [];
}

function deriveScopes(
  toolName: string,
  args: Readonly<Record<string, unknown>>,
  workingDirectory: string | null | undefined,
): BypassScope[] {
  if (toolName === 'execute_cmd') {
    const line = readCommandLine(args.command);
    if (!line.readable) return [];
    const seen = new Map<string, { tool: string; program: string; subcommand: string | null; options: Set<string> }>();
    for (const c of line.commands) {
      if (notNarrowable(c.argv)) return [];
      const k = commandKey(c.argv);
      const key = JSON.stringify([k.program, k.subcommand]);
      const prev = seen.get(key);
      if (prev) for (const o of k.options) prev.options.add(o);
      else seen.set(key, { tool: toolName, program: k.program, subcommand: k.subcommand, options: new Set(k.options) });
    }
    const scopes = [...seen.values()].map((s) => ({ ...s, options: [...s.options].sort() }));
    return scopes.every((s) => s.options.length <= MAX_SCOPE_OPTIONS) ? scopes : [];
  }
  if (PATH_TOOLS.includes(toolName)) {
    const paths = effectiveCallPaths(toolName, args, workingDirectory);
    if (paths.length === 0 || !paths.every((p) => p.ok)) return [];
    const dirs = new Set(paths.map((p) => (p.ok ? parentDirectory(p.value) : '')));
    return [...dirs].map((directory) => ({ tool: toolName, directory }));
  }
  return [{ tool: toolName }];
}

/**
 * A narrow scope covers a call of its own tool: for `execute_cmd`, every command of the line has
 * the scope's program and subcommand, its options within the scope's option shape (a scope stored
 * before option shapes existed has none: it covers commands without options only), and is not one
 * the read-only catalogue says writes or runs code; for a file tool, every path's directory.
 */
function narrowCovers(scope: Extract<BypassScope, { tool: string }>, input: GateInput): boolean {
  if (scope.tool !== input.toolName) return false;
  if (input.toolName === 'execute_cmd') {
    if (scope.program === undefined) return false;
    const line = readCommandLine(input.arguments.command);
    if (!line.readable) return false;
    const shape = new Set(scope.options ?? []);
    return line.commands.every((c) => {
      if (notNarrowable(c.argv)) return false;
      const k = commandKey(c.argv);
      return (
        k.program === scope.program &&
        k.subcommand === (scope.subcommand ?? null) &&
        k.options.every((o) => shape.has(o))
      );
    });
  }
  if (PATH_TOOLS.includes(input.toolName)) {
    if (scope.directory === undefined) return false;
    const paths = effectiveCallPaths(input.toolName, input.arguments, input.runContext?.workingDirectory);
    // The directory the human approved, where the call is written and where it lands.
    const landing = landingPaths(input);
    return (
      paths.length > 0 &&
      paths.every((p) => p.ok && parentDirectory(p.value) === scope.directory) &&
      (landing === null || landing.every((l) => l !== null && parentOf(l) === scope.directory))
    );
  }
  return scope.program === undefined && scope.directory === undefined;
}

/**
 * Whether a session bypass covers a call. A shell line the gate cannot read (see
 * `readCommandLine`) is covered by none, not even `all`.
 */
export function bypassCovers(scope: BypassScope, input: GateInput): boolean {
  if (input.toolName === 'execute_cmd' && !readCommandLine(input.arguments.command).readable) return false;
  if (scope === 'all') return true;
  if ('category' in scope) return scope.category.toLowerCase() === toolCategory(input.toolName);
  if ('mcp_server' in scope) return mcpServerOf(input.toolName) === scope.mcp_server;
  return narrowCovers(scope, input);
}

// ---------------------------------------------------------------- deciding

const RANK: Record<RuleAction, number> = { allow: 0, require: 1, deny: 2 };

function describe(rule: CompiledRule): string {
  return rule.description;
}

function appliesTo(rule: CompiledRule, input: GateInput): boolean {
  if (rule.agentId !== null && rule.agentId !== input.agentId) return false;
  if (rule.source !== null && rule.source !== input.source) return false;
  return rule.tool(input.toolName);
}

function pathsMatch(rule: CompiledRule, paths: Array<string | null>): boolean {
  if (!rule.path) return true;
  if (paths.length === 0) return false;
  const match = rule.path;
  return paths.every((p) => p !== null && match(p));
}

/**
 * A command rule's path condition judges the directory the command runs in (the `workdir`
 * argument or the session's working directory, by the runner's resolver). An allow rule needs the
 * directory to match; a deny or require rule also applies when the directory cannot be resolved,
 * so that an unreadable `workdir` never slips past it.
 */
function workdirMatches(rule: CompiledRule, cwd: Array<string | null>): boolean {
  if (!rule.path) return true;
  if (rule.action !== 'allow' && cwd.some((p) => p === null)) return true;
  const match = rule.path;
  // The directory matches when the glob names it or the files directly in it (`proj/**`, `proj/*`).
  return cwd.length > 0 && cwd.every((d) => d !== null && (match(d) || match(`${d === '/' ? '' : d}/${ENTRY}`)));
}
/** A name no glob of a rule spells out: stands for "a file in this directory". */
const ENTRY = '\u0000entry';

/** First matching rule for a non-shell call (or a shell call judged as a whole). */
function firstMatch(rules: readonly CompiledRule[], input: GateInput, paths: Array<string | null>): GateResult {
  for (const rule of rules) {
    if (!appliesTo(rule, input)) continue;
    if (rule.broken) return { decision: 'require', ruleId: rule.id, reason: describe(rule), by: 'rule' };
    if (!pathsMatch(rule, paths)) continue;
    if (rule.command) continue; // a command condition never holds for a call without a command line
    return { decision: rule.action, ruleId: rule.id, reason: describe(rule), by: 'rule' };
  }
  return { decision: 'require', reason: 'no rule matched (default closed)', by: 'rule' };
}

/**
 * The decision for one command of a shell line: its first matching rule. Allow rules match the
 * command as written and never one that runs other commands; an allow rule matching an invocation
 * that writes or runs programs (the read-only catalogue) asks instead. Deny and require rules
 * match what runs.
 */
function decideOne(
  rules: readonly CompiledRule[],
  input: GateInput,
  cmd: SimpleCommand,
  cwd: Array<string | null>,
): GateResult {
  const unallowable = unallowableReason(cmd);
  const text = cmd.argv.join(' ');
  const d = firstCommandMatch(rules, input, cmd, cwd, unallowable, text);
  if (d.decision === 'deny') return d;
  // Code the gate cannot read may run anything a deny rule names: a human decides (no bypass).
  const code = runsCodeReason(cmd.argv);
  if (code) {
    const deny = rules.find(
      (r) => r.action === 'deny' && !r.broken && r.command && appliesTo(r, input) && workdirMatches(r, cwd),
    );
    if (deny)
      return {
        decision: 'require',
        ruleId: deny.id,
        reason: `${text}: ${code}; ${describe(deny)} cannot see inside it: a human decides`,
        by: 'rule',
        needsHuman: true,
      };
  }
  return d;
}

function firstCommandMatch(
  rules: readonly CompiledRule[],
  input: GateInput,
  cmd: SimpleCommand,
  cwd: Array<string | null>,
  unallowable: string | null,
  text: string,
): GateResult {
  let runs: NormalisedCommand[] | undefined;
  for (const rule of rules) {
    if (!appliesTo(rule, input)) continue;
    if (rule.broken) return { decision: 'require', ruleId: rule.id, reason: describe(rule), by: 'rule' };
    if (!workdirMatches(rule, cwd)) continue;
    if (rule.action === 'allow') {
      if (rule.command && !rule.command.exact(cmd.argv)) continue;
      if (unallowable) continue;
      const caveat = writesOrRuns(cmd.argv);
      if (caveat)
        return {
          decision: 'require',
          ruleId: rule.id,
          reason: `${text}: ${caveat}; ${describe(rule)} asks`,
          by: 'rule',
        };
    } else if (rule.command) {
      runs ??= whatRuns(cmd.argv);
      const pattern = rule.command;
      if (!runs.some((n) => pattern.matchesNormalised(n))) continue;
    }
    return { decision: rule.action, ruleId: rule.id, reason: `${text}: ${describe(rule)}`, by: 'rule' };
  }
  return {
    decision: 'require',
    reason: `${text || 'command'}: ${unallowable ?? 'no rule matched (default closed)'}`,
    by: 'rule',
  };
}

/**
 * A line that cannot be read as simple commands: a deny rule whose command could be anywhere in
 * it denies; otherwise it asks a human, whatever the allow rules say.
 */
function decideUnreadable(
  rules: readonly CompiledRule[],
  input: GateInput,
  line: string,
  why: string,
  cwd: Array<string | null>,
): GateResult {
  const segments = scanSegments(line);
  for (const rule of rules) {
    if (!appliesTo(rule, input) || rule.broken || rule.action !== 'deny' || !workdirMatches(rule, cwd)) continue;
    if (!rule.command || scanMatches(rule.command, segments) === true)
      return { decision: 'deny', ruleId: rule.id, reason: `${describe(rule)}; ${why}`, by: 'rule', needsHuman: true };
  }
  return { decision: 'require', reason: why, by: 'rule', needsHuman: true };
}

/** `execute_cmd`: every command of the parsed line is decided; the most restrictive answer wins. */
function decideShell(rules: readonly CompiledRule[], input: GateInput, cwd: Array<string | null>): GateResult {
  const line = input.arguments.command;
  if (typeof line !== 'string') return { decision: 'require', reason: 'no command', by: 'rule', needsHuman: true };
  const analysis = analyzeCommand(line);
  if (analysis.kind === 'needs_human') return decideUnreadable(rules, input, line, analysis.reason, cwd);
  let worst: GateResult | null = null;
  for (const cmd of analysis.commands) {
    const d = decideOne(rules, input, cmd, cwd);
    if (
      !worst ||
      RANK[d.decision] > RANK[worst.decision] ||
      (d.decision === worst.decision && d.needsHuman && !worst.needsHuman)
    )
      worst = d;
    if (d.decision === 'deny') break;
  }
  return worst as GateResult;
}

/**
 * Rules that are code, not rows: evaluated before every stored rule, shown read-only by the rules
 * console, never deleted or shadowed by an admin's rule (spec: the memory write exception comes
 * first). `applies` says for whom.
 */
export const BUILT_IN_RULES = [
  {
    id: '00000000-0000-4000-8000-0000000000b1',
    toolPattern: '@fs_write',
    pathPattern: 'shared-memory/*',
    action: 'deny',
    applies: 'sessions of non-admins',
    note: 'shared memory is writable only from an admin session',
  },
  {
    id: '00000000-0000-4000-8000-0000000000b2',
    toolPattern: '@fs_write',
    pathPattern: 'user-memory/*',
    action: 'allow',
    applies: 'every session',
    note: "writes to the user's own memory documents are always allowed",
  },
] as const satisfies ReadonlyArray<{
  id: string;
  toolPattern: string;
  pathPattern: string;
  action: RuleAction;
  applies: string;
  note: string;
}>;
const [SHARED_MEMORY_ADMIN_ONLY, USER_MEMORY_WRITES] = BUILT_IN_RULES;
export const BUILT_IN_RULE_IDS: ReadonlySet<string> = new Set(BUILT_IN_RULES.map((r) => r.id));

/** The built-in rules' decision for a call, or null when none applies. */
export function decideBuiltIn(input: GateInput, paths: Array<string | null> = filePaths(input)): GateResult | null {
  if (!FS_WRITE_TOOLS.includes(input.toolName)) return null;
  if (paths.length === 0) return null;
  const inRoot = (p: string | null, root: string) => p !== null && (p === root || p.startsWith(`${root}/`));
  if (!input.isAdmin && paths.some((p) => inRoot(p, 'shared-memory')))
    return {
      decision: 'deny',
      ruleId: SHARED_MEMORY_ADMIN_ONLY.id,
      reason: SHARED_MEMORY_ADMIN_ONLY.note,
      by: 'policy',
    };
  if (paths.every((p) => inRoot(p, 'user-memory')))
    return { decision: 'allow', ruleId: USER_MEMORY_WRITES.id, reason: USER_MEMORY_WRITES.note, by: 'policy' };
  return null;
}

/**
 * The built-in rules, then the stored rules: what a Require could then be relaxed from. A call
 * whose landing is known (`landingPaths`) is judged twice, on its lexical paths and on where they
 * land, and the more restrictive answer stands: a deny on either denies, an allow needs both.
 */
export function decideByRules(rules: RuleSet, input: GateInput): GateResult {
  const lexical = decideOn(rules, input, callPaths(input));
  const landing = landingPaths(input);
  if (landing === null) return lexical;
  const there = decideOn(rules, input, landing);
  const needsHuman = lexical.needsHuman || there.needsHuman ? { needsHuman: true } : {};
  if (RANK[there.decision] <= RANK[lexical.decision]) return { ...lexical, ...needsHuman };
  const where = landing.map((l) => l ?? 'a path the tool runner could not resolve').join(', ');
  return { ...there, reason: `${there.reason} (where the call lands: ${where})`, ...needsHuman };
}

/** One judgement of the call with `paths` standing for its `callPaths`. */
function decideOn(rules: RuleSet, input: GateInput, paths: Array<string | null>): GateResult {
  const files = input.toolName === 'execute_cmd' ? [] : paths;
  const builtIn = decideBuiltIn(input, files);
  if (builtIn) return builtIn;
  const ordered = rules.ordered(input.securityGroup);
  return input.toolName === 'execute_cmd' ? decideShell(ordered, input, paths) : firstMatch(ordered, input, files);
}

function under(path: string, roots: readonly string[]): boolean {
  return roots.some((raw) => {
    const root = normalisePath(raw, WORKSPACE);
    return root !== null && (path === root || path.startsWith(root === '/' ? '/' : `${root}/`));
  });
}

/** RunContext fast path: a read (or write) inside a pre-authorised path needs no human. */
export function fastPathAllows(input: GateInput): boolean {
  const rc = input.runContext;
  if (!rc) return false;
  const reads = FS_READ_TOOLS.includes(input.toolName);
  const writes = FS_WRITE_TOOLS.includes(input.toolName);
  if (!reads && !writes) return false;
  // Inside a pre-authorised path as written and where it lands.
  const paths = [...filePaths(input), ...(fileLandings(input) ?? [])];
  if (paths.length === 0) return false;
  const roots = writes ? (rc.allowFsWrites ?? []) : [...(rc.allowFsReads ?? []), ...(rc.allowFsWrites ?? [])];
  return roots.length > 0 && paths.every((p) => p !== null && under(p, roots));
}

/** A Require relaxed by the RunContext or a bypass, or auto-denied; Allow and Deny pass unchanged. */
export function relax(result: GateResult, input: GateInput): GateResult {
  if (result.decision !== 'require') return result;
  if (result.needsHuman) {
    if (!input.autoDeny) return result;
    return {
      ...result,
      decision: 'deny',
      reason: `${result.reason}; the session cannot ask a human (auto-deny)`,
      by: 'auto_deny',
    };
  }
  if (fastPathAllows(input))
    return { decision: 'allow', ruleId: result.ruleId, reason: 'pre-authorised by the run context', by: 'run_context' };
  const bypass = (input.bypasses ?? []).find((b) => bypassCovers(b, input));
  if (bypass)
    return {
      decision: 'allow',
      ruleId: result.ruleId,
      reason: `session bypass (${typeof bypass === 'string' ? bypass : JSON.stringify(bypass)})`,
      by: 'bypass',
    };
  if (input.autoDeny)
    return {
      decision: 'deny',
      ruleId: result.ruleId,
      reason: 'approval required but the session cannot ask a human (auto-deny)',
      by: 'auto_deny',
    };
  return result;
}

export function evaluate(rules: RuleSet, input: GateInput): GateResult {
  return relax(decideByRules(rules, input), input);
}

/**
 * May the model see this tool? Hidden only when the first rule that applies to the tool (by tool,
 * agent and source) is an unconditional Deny; a conditional or broken first rule keeps it visible.
 * Remembered by the rule set (see `RuleSet.visibleAnswers`).
 */
export function isVisible(rules: RuleSet, tool: string, ctx: VisibilityContext): boolean {
  return visibleIn(rules, rules.visibleAnswers(ctx), tool, ctx);
}

/** The tools of `tools` the model may see, in their order (`isVisible` of each). */
export function visibleTools(rules: RuleSet, tools: readonly string[], ctx: VisibilityContext): string[] {
  const answers = rules.visibleAnswers(ctx);
  return tools.filter((t) => visibleIn(rules, answers, t, ctx));
}

function visibleIn(rules: RuleSet, answers: Map<string, boolean>, tool: string, ctx: VisibilityContext): boolean {
  const known = answers.get(tool);
  if (known !== undefined) return known;
  const answer = computeVisible(rules, tool, ctx);
  rules.rememberVisible(answers, tool, answer);
  return answer;
}

/** `isVisible` without the memo: the rule engine's answer. */
export function computeVisible(rules: RuleSet, tool: string, ctx: VisibilityContext): boolean {
  const input: GateInput = { ...ctx, toolName: tool, arguments: {}, isAdmin: false };
  for (const rule of rules.ordered(ctx.securityGroup)) {
    if (!appliesTo(rule, input)) continue;
    if (rule.broken || rule.path || rule.command) return true;
    return rule.action !== 'deny';
  }
  return true;
}
