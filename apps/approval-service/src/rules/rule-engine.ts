import { posix } from 'node:path';
import { anyCharsGlob, GlobTest, pathGlob, RULE_PATH_MAX_CHARS } from './rule-glob';
import { parseShell, ShellCommand, unallowableReason } from './shell-parser';

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

export type BypassScope = 'all' | { category: string } | { mcp_server: string };

export interface RunContext {
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
}

export interface GateResult {
  decision: RuleAction;
  ruleId?: string;
  reason: string;
  by: GateBy;
}

export const FS_READ_TOOLS: readonly string[] = [
  'list_files',
  'read_file',
  'search_file',
  'grep_files',
  'memory_search',
];
export const FS_WRITE_TOOLS: readonly string[] = [
  'write_file',
  'edit_file',
  'insert_at_line',
  'replace_lines',
  'append_file',
];
export const WORKSPACE = '/workspace';
const MEMORY_ROOTS = ['user-memory', 'shared-memory'];
const TOOL_NAME = /^[A-Za-z0-9_.:-]+$/;
const TOOL_GLOB = /^[A-Za-z0-9_.:*-]+$/;

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
  command: ((argv: readonly string[]) => boolean) | null;
  /** Why the rule failed to load: it then means Require wherever it could apply. */
  broken: string | null;
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

export function compileToolPattern(pattern: string): (name: string) => boolean {
  const p = pattern.trim();
  if (p === '*') return () => true;
  if (p === '@fs_read') return (n) => FS_READ_TOOLS.includes(n);
  if (p === '@fs_write') return (n) => FS_WRITE_TOOLS.includes(n);
  if (p === '@fs_any') return (n) => FS_READ_TOOLS.includes(n) || FS_WRITE_TOOLS.includes(n);
  if (p.startsWith('@')) throw new RuleCompileError('tool_pattern', `unknown tool group ${p}`);
  if (p.includes('*')) {
    if (!TOOL_GLOB.test(p)) throw new RuleCompileError('tool_pattern', `invalid tool pattern ${p}`);
    if (p.endsWith('*') && !p.slice(0, -1).includes('*')) {
      const prefix = p.slice(0, -1);
      return (n) => n.startsWith(prefix);
    }
    const re = globRegex(p, '.*');
    return (n) => re.test(n);
  }
  if (!TOOL_NAME.test(p)) throw new RuleCompileError('tool_pattern', `invalid tool name ${p}`);
  return (n) => n === p;
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
  const re = globRegex(posix.normalize(anchored), '[^/]*');
  return (path) => re.test(path);
}

/**
 * `git status` matches every command whose argv starts with `git status`; a `*` word matches any
 * one word, or as the last word any rest; a word with `*` inside is a glob within that word.
 */
export function compileCommandPattern(pattern: string): (argv: readonly string[]) => boolean {
  const parsed = parseShell(pattern);
  if (!parsed.ok) throw new RuleCompileError('command_pattern', `command pattern does not parse: ${parsed.reason}`);
  if (parsed.commands.length !== 1 || parsed.commands[0].argv.length === 0)
    throw new RuleCompileError('command_pattern', 'a command pattern names exactly one command');
  const want = parsed.commands[0].argv;
  const words = want.map((w) => (w === '*' ? null : w.includes('*') ? globRegex(w, '.*') : w));
  return (argv) => {
    for (let i = 0; i < words.length; i++) {
      const w = words[i];
      if (w === null) {
        if (i === words.length - 1) return true;
        if (argv[i] === undefined) return false;
        continue;
      }
      const a = argv[i];
      if (a === undefined) return false;
      if (typeof w === 'string' ? a !== w : !w.test(a)) return false;
    }
    return true;
  };
}

/** A rule glob, matched in linear time (rule-glob.ts): `*` any characters, or within a path segment. */
function globRegex(pattern: string, star: '.*' | '[^/]*'): GlobTest {
  return star === '.*' ? anyCharsGlob(pattern) : pathGlob(pattern);
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

/** The compiled rule set, with the evaluation order per security group computed once. */
export class RuleSet {
  private readonly rules: CompiledRule[];
  private readonly byGroup = new Map<string, CompiledRule[]>();

  constructor(rows: readonly RuleRow[]) {
    this.rules = rows.map(compileRule).sort((a, b) => a.priority - b.priority || a.ord - b.ord);
  }

  get size(): number {
    return this.rules.length;
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
}

// ---------------------------------------------------------------- paths

export function isMemoryPath(p: string): boolean {
  return MEMORY_ROOTS.some((root) => p === root || p.startsWith(`${root}/`));
}

/**
 * The lexically normalised path a call's argument names: memory paths stay relative
 * (`user-memory/notes.md`), everything else becomes absolute under the working directory. A path
 * longer than PATH_MAX, or a memory path that climbs out of its root with `..`, is invalid (null)
 * and matches no path rule.
 * Symlinks are not followed here: the tool runner's jail is what stops an escape.
 */
export function normalisePath(raw: string, workingDirectory: string = WORKSPACE): string | null {
  if (raw.includes('\0') || raw.length > RULE_PATH_MAX_CHARS) return null;
  const trimmed = raw.replace(/^(\.\/)+/, '');
  const root = MEMORY_ROOTS.find((r) => trimmed === r || trimmed.startsWith(`${r}/`));
  if (root) {
    const n = posix.normalize(trimmed).replace(/\/+$/, '');
    return n === root || n.startsWith(`${root}/`) ? n : null;
  }
  if (raw.startsWith('/')) return posix.normalize(raw).replace(/(.)\/+$/, '$1');
  return posix.resolve(workingDirectory, raw);
}

/** The session's working directory, if it is inside the workspace; else the workspace. */
export function effectiveWorkingDirectory(rc: RunContext | undefined): string {
  const wd = rc?.workingDirectory;
  if (!wd) return WORKSPACE;
  const n = posix.resolve(WORKSPACE, wd);
  return n === WORKSPACE || n.startsWith(`${WORKSPACE}/`) ? n : WORKSPACE;
}

/** The normalised paths a call touches (null entries are invalid paths); none for a tool without one. */
export function callPaths(input: GateInput): Array<string | null> {
  const wd = effectiveWorkingDirectory(input.runContext);
  const raw = input.arguments.path;
  if (typeof raw === 'string' && raw.length > 0) return [normalisePath(raw, wd)];
  if (input.toolName === 'list_files') return [wd];
  return [];
}

// ---------------------------------------------------------------- categories

export type ToolCategory = 'filesystem' | 'shell' | 'mcp' | 'agents' | 'plumbing' | 'system' | 'dynamic';

const PLUMBING = ['update_scratchpad', 'write_todos', 'ask_user_clarification', 'activate_tools', 'list_agents'];

export function toolCategory(name: string): ToolCategory {
  if (FS_READ_TOOLS.includes(name) || FS_WRITE_TOOLS.includes(name)) return 'filesystem';
  if (name === 'execute_cmd') return 'shell';
  if (name.startsWith('mcp__')) return 'mcp';
  if (name === 'execute_task' || name === 'execute_subtask') return 'agents';
  if (PLUMBING.includes(name)) return 'plumbing';
  if (name === 'restart' || name === 'task_completed' || name === 'read_notification') return 'system';
  return 'dynamic';
}

/** `mcp__<server>__<tool>` → server. */
export function mcpServerOf(name: string): string | null {
  const m = /^mcp__(.+?)__./.exec(name);
  return m ? m[1] : null;
}

export function bypassCovers(scope: BypassScope, toolName: string): boolean {
  if (scope === 'all') return true;
  if ('category' in scope) return scope.category.toLowerCase() === toolCategory(toolName);
  return mcpServerOf(toolName) === scope.mcp_server;
}

// ---------------------------------------------------------------- deciding

const RANK: Record<RuleAction, number> = { allow: 0, require: 1, deny: 2 };

function describe(rule: CompiledRule): string {
  return rule.broken
    ? `rule ${rule.id} failed to load (${rule.broken}): asking`
    : `rule ${rule.id} (${rule.action}, priority ${rule.priority})`;
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

/** The decision for one command of a shell line: its first matching rule; wrappers skip every allow. */
function decideOne(rules: readonly CompiledRule[], input: GateInput, cmd: ShellCommand): GateResult {
  const unallowable = unallowableReason(cmd);
  for (const rule of rules) {
    if (!appliesTo(rule, input)) continue;
    if (rule.broken) return { decision: 'require', ruleId: rule.id, reason: describe(rule), by: 'rule' };
    if (rule.path) continue;
    if (rule.command && !rule.command(cmd.argv)) continue;
    if (rule.action === 'allow' && unallowable) continue;
    return { decision: rule.action, ruleId: rule.id, reason: `${cmd.argv.join(' ')}: ${describe(rule)}`, by: 'rule' };
  }
  return {
    decision: 'require',
    reason: `${cmd.argv.join(' ') || 'command'}: ${unallowable ?? 'no rule matched (default closed)'}`,
    by: 'rule',
  };
}

/** `execute_cmd`: every command of the parsed line is decided; the most restrictive answer wins. */
function decideShell(rules: readonly CompiledRule[], input: GateInput): GateResult {
  const line = input.arguments.command;
  const parsed = typeof line === 'string' ? parseShell(line) : ({ ok: false, reason: 'no command' } as const);
  if (!parsed.ok || parsed.commands.length === 0) {
    // Only unconditional rules can judge a line we cannot read, and none of them may allow it.
    const why = parsed.ok ? 'empty command line' : `the command line cannot be parsed (${parsed.reason})`;
    for (const rule of rules) {
      if (!appliesTo(rule, input)) continue;
      if (rule.broken) return { decision: 'require', ruleId: rule.id, reason: describe(rule), by: 'rule' };
      if (rule.path || rule.command) continue;
      if (rule.action === 'deny') return { decision: 'deny', ruleId: rule.id, reason: describe(rule), by: 'rule' };
      return { decision: 'require', ruleId: rule.id, reason: why, by: 'rule' };
    }
    return { decision: 'require', reason: why, by: 'rule' };
  }
  let worst: GateResult | null = null;
  for (const cmd of parsed.commands) {
    const d = decideOne(rules, input, cmd);
    if (!worst || RANK[d.decision] > RANK[worst.decision]) worst = d;
    if (d.decision === 'deny') break;
  }
  return worst as GateResult;
}

/** Only the rules (and the shared-memory policy): what a Require could then be relaxed from. */
export function decideByRules(rules: RuleSet, input: GateInput): GateResult {
  const paths = callPaths(input);
  if (!input.isAdmin && FS_WRITE_TOOLS.includes(input.toolName) && paths.some((p) => p?.startsWith('shared-memory')))
    return {
      decision: 'deny',
      reason: 'shared memory is writable only from an admin session',
      by: 'policy',
    };
  const ordered = rules.ordered(input.securityGroup);
  return input.toolName === 'execute_cmd' ? decideShell(ordered, input) : firstMatch(ordered, input, paths);
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
  const paths = callPaths(input);
  if (paths.length === 0) return false;
  const roots = writes ? (rc.allowFsWrites ?? []) : [...(rc.allowFsReads ?? []), ...(rc.allowFsWrites ?? [])];
  return roots.length > 0 && paths.every((p) => p !== null && under(p, roots));
}

/** A Require relaxed by the RunContext or a bypass, or auto-denied; Allow and Deny pass unchanged. */
export function relax(result: GateResult, input: GateInput): GateResult {
  if (result.decision !== 'require') return result;
  if (fastPathAllows(input))
    return { decision: 'allow', ruleId: result.ruleId, reason: 'pre-authorised by the run context', by: 'run_context' };
  const bypass = (input.bypasses ?? []).find((b) => bypassCovers(b, input.toolName));
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
 */
export function isVisible(
  rules: RuleSet,
  tool: string,
  ctx: Pick<GateInput, 'agentId' | 'source' | 'securityGroup'>,
): boolean {
  const input: GateInput = { ...ctx, toolName: tool, arguments: {}, isAdmin: false };
  for (const rule of rules.ordered(ctx.securityGroup)) {
    if (!appliesTo(rule, input)) continue;
    if (rule.broken || rule.path || rule.command) return true;
    return rule.action !== 'deny';
  }
  return true;
}
