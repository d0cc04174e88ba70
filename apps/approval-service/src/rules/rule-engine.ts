import { FS_READ_TOOLS, FS_WRITE_TOOLS } from '@skald/contracts';
import { NormalisedCommand, runsCodeReason, scanMatches, unallowableReason, whatRuns } from './command-match';
import type { GateInput, GateResult, RuleAction } from './gate-input';
import { callPaths, fileLandings, filePaths, landingPaths, normalisePath, WORKSPACE } from './gate-paths';
import { writesOrRuns } from './read-only-catalogue';
import { CompiledRule, RuleSet, VisibilityContext } from './rule-set';
import { bypassCovers } from './session-bypass';
import { analyzeCommand, scanSegments, SimpleCommand } from './shell-analysis';

/**
 * The approval gate as a pure function: rules (ordered by priority, then insertion; the session's
 * security group before the default one; first match wins; default closed), then the relaxations
 * of a Require (RunContext fast path, session bypass) and the auto-deny of headless sessions.
 * A Deny is final: nothing relaxes it. What it judges is in gate-input.ts, the rules compiled in
 * rule-set.ts, the call's paths in gate-paths.ts, the session bypasses in session-bypass.ts.
 */

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
    name: 'shared memory is writable only from an admin session',
    toolPattern: '@fs_write',
    pathPattern: 'shared-memory/*',
    action: 'deny',
    applies: 'sessions of non-admins',
    note: 'shared memory is writable only from an admin session',
  },
  {
    id: '00000000-0000-4000-8000-0000000000b2',
    name: "the user's own memory is always writable",
    toolPattern: '@fs_write',
    pathPattern: 'user-memory/*',
    action: 'allow',
    applies: 'every session',
    note: "writes to the user's own memory documents are always allowed",
  },
] as const satisfies ReadonlyArray<{
  id: string;
  name: string;
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
  const ordered = rules.ordered(input);
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
  for (const rule of rules.ordered(ctx)) {
    if (!appliesTo(rule, input)) continue;
    if (rule.broken || rule.path || rule.command) return true;
    return rule.action !== 'deny';
  }
  return true;
}
