import type { BypassScope as ContractBypassScope } from '@skald/contracts';
import type { ApprovalAuditRow, ApprovalRulesRow } from '@skald/persistence';

// What the approval gate judges and answers (see rule-engine.ts): a rule as stored, the call with
// its session's context, and the decision.

export type RuleAction = ApprovalRulesRow['action'];
/** Who decided, the gate being the judge: every `approval_audit.by` but a human's answer. */
export type GateBy = Exclude<ApprovalAuditRow['by'], 'human'>;

/** A rule as stored. `action` is a string: a row with an unknown action fails to load. */
export interface RuleRow {
  id: string;
  /** What a decision calls it (contracts' `RuleName`). */
  name: string;
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
  /** The session's own security group (an admin's override), if any. */
  securityGroup?: string;
  /** The security groups the session owner's groups bring: their rules apply with `securityGroup`'s. */
  securityGroups?: readonly string[];
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

/** The security groups whose rules apply to a call: the session's own and its owner's groups', once each, sorted. */
export function scopesOf(ctx: Pick<GateInput, 'securityGroup' | 'securityGroups'>): string[] {
  const all = [...(ctx.securityGroups ?? []), ...(ctx.securityGroup ? [ctx.securityGroup] : [])];
  return [...new Set(all.filter((g) => g !== ''))].sort();
}
