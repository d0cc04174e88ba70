import { z } from 'zod';
import { Actor, Id, StoredText, Timestamp } from './common';
import { GateRunContext } from './run-context';
import { ApprovalChannel, BypassScope, EditedArguments, HumanDecision, LandsAt, SessionApprovalScope } from './ws';

/**
 * Approval service: REST bodies of PROTOCOL.md "Approvals and inbox" and the NATS payloads behind
 * them. The subjects are appended to `SUBJECTS` in subjects.ts.
 */

// subjects.ts imports this file, so its schemas are not imported back (no cycle): these two have
// the exact shapes of `HumanDecision` and `ApprovalPreview` there.
export const RuleAction = z.enum(['allow', 'deny', 'require']);
const PreviewShape = z.object({
  path: z.string(),
  old_content: z.string().optional(),
  new_content: z.string(),
  base_hash: z.string().optional(),
});
const Pattern = StoredText(512).min(1);

export const ApprovalRuleInput = z.object({
  tool_pattern: Pattern,
  path_pattern: Pattern.nullish(),
  command_pattern: Pattern.nullish(),
  agent_id: StoredText(128).min(1).nullish(),
  source: StoredText(32).min(1).nullish(),
  security_group: StoredText(128).min(1).nullish(),
  action: RuleAction,
  priority: z.number().int().min(0).max(1_000_000),
  note: StoredText(2000).nullish(),
});
export type ApprovalRuleInput = z.infer<typeof ApprovalRuleInput>;
export const ApprovalRulePatch = ApprovalRuleInput.partial().refine(
  (p) => Object.keys(p).length > 0,
  'nothing to change',
);
export type ApprovalRulePatch = z.infer<typeof ApprovalRulePatch>;
export const ApprovalRuleDto = z.object({
  id: Id,
  tool_pattern: z.string(),
  path_pattern: z.string().nullable(),
  command_pattern: z.string().nullable(),
  agent_id: z.string().nullable(),
  source: z.string().nullable(),
  security_group: z.string().nullable(),
  action: RuleAction,
  priority: z.number().int(),
  note: z.string().nullable(),
  is_seed: z.boolean(),
  /**
   * **(new)** A rule that is code (the `user-memory/` write exception, `shared-memory/` for admin
   * sessions only): evaluated before every stored rule, read-only (PATCH / DELETE answer 409).
   */
  built_in: z.boolean().optional(),
  /** For a built-in rule: whose sessions it applies to. */
  applies: z.string().optional(),
  /**
   * **(new)** An allow rule whose command pattern matches no command the gate can allow (every
   * such command runs others or code, writes, or reads configuration that runs programs: `git *`,
   * `env *`): why. The rule is kept; it never allows, the gate asks instead.
   */
  never_allows: z.string().optional(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type ApprovalRuleDto = z.infer<typeof ApprovalRuleDto>;
export const ApprovalRuleList = z.object({ items: z.array(ApprovalRuleDto) });

export const RuleTestInput = z.object({
  tool_name: StoredText(256).min(1),
  arguments: z.record(z.string(), z.unknown()).default({}),
  agent_id: StoredText(128).optional(),
  source: StoredText(32).optional(),
  session_id: Id.optional(),
  security_group: StoredText(128).optional(),
});
export const GateBy = z.enum(['rule', 'bypass', 'run_context', 'human', 'auto_deny', 'policy']);
export type GateBy = z.infer<typeof GateBy>;
export const RuleTestResult = z.object({
  decision: RuleAction,
  rule_id: Id.optional(),
  reason: z.string(),
  by: GateBy,
});

export const ResolveToolInput = z.object({
  action: z.enum(['approve', 'reject']),
  note: StoredText(4000).optional(),
});
export const ResolveApprovalInput = ResolveToolInput.extend({
  bypass_secs: z
    .number()
    .int()
    .nonnegative()
    .max(30 * 24 * 3600)
    .optional(),
  bypass_scope: SessionApprovalScope.optional(),
  /** **(new)** Approve the call with these arguments instead (`EditedArguments`, ws.ts). */
  arguments: EditedArguments.optional(),
  /** The surface the answer comes from, as the client says (`inbox` when absent); the audit names it. */
  channel: z.enum(['inbox', 'cli']).optional(),
});
export const ResolveClarificationInput = z.object({ answer: StoredText(64 * 1024) });

export const InboxApproval = z.object({
  request_id: Id,
  tool_call_id: Id,
  session_id: Id,
  source: z.string(),
  tool_name: z.string(),
  arguments: z.unknown(),
  preview: PreviewShape.optional(),
  /** **(new)** Where the call's path lands when that differs from the path it names (`LandsAt`). */
  lands_at: LandsAt,
  /**
   * **(new)** What "approve for this session" opens for this call (`bypass_scope: "call"`): its
   * narrow scopes and the default lifetime in seconds. Absent when the call cannot be narrowed
   * (a command line the gate cannot read): then only a plain approval is offered.
   */
  session_approval: z.object({ scopes: z.array(BypassScope).min(1), secs: z.number().int().positive() }).optional(),
  created_at: Timestamp,
});
export const InboxClarification = z.object({
  request_id: Id,
  tool_call_id: Id,
  session_id: Id,
  source: z.string(),
  title: z.string(),
  question: z.string(),
  suggested_answers: z.array(z.string()),
  created_at: Timestamp,
});
export const InboxDto = z.object({ approvals: z.array(InboxApproval), clarifications: z.array(InboxClarification) });
export type InboxDto = z.infer<typeof InboxDto>;

export const BypassDto = z.object({
  id: Id,
  session_id: Id,
  scope: BypassScope,
  expires_at: Timestamp.optional(),
  created_at: Timestamp,
});
export type BypassDto = z.infer<typeof BypassDto>;
export const BypassList = z.object({ items: z.array(BypassDto) });
export const CreateBypassInput = z.object({
  session_id: Id,
  scope: BypassScope,
  /** Seconds until it expires; absent or 0 = the whole session. */
  secs: z
    .number()
    .int()
    .nonnegative()
    .max(30 * 24 * 3600)
    .optional(),
});

export const AuditQuery = z.object({
  session_id: Id.optional(),
  page: z.coerce.number().int().min(1).default(1),
  per_page: z.coerce.number().int().min(1).max(200).default(50),
});
export const AuditItem = z.object({
  id: Id,
  at: Timestamp,
  session_id: Id.nullable(),
  tool_call_id: Id.nullable(),
  tool_name: z.string(),
  args_digest: z.string(),
  decision: z.enum(['allow', 'deny', 'require', 'approve', 'reject', 'answer']),
  by: GateBy,
  actor_user_id: Id.optional(),
  /** Where a human answered (`by: "human"`). */
  channel: ApprovalChannel.optional(),
  rule_id: Id.optional(),
  note: z.string().optional(),
  /**
   * **(new)** The human approved the call with edited arguments: their digest and a unified diff
   * of each changed argument (original → edited). `args_digest` stays the original's.
   */
  edit: z.object({ args_digest: z.string(), diff: z.string() }).optional(),
});
export type AuditItem = z.infer<typeof AuditItem>;
export const AuditList = z.object({ items: z.array(AuditItem), total: z.number().int() });

export const KnownToolDto = z.object({
  name: z.string(),
  category: z.string(),
  origin: z.enum(['registry', 'synthetic', 'discovered']),
});
export const KnownToolList = z.object({ items: z.array(KnownToolDto) });

// ---------------------------------------------------------------- NATS payloads

export const RulesListRequest = z.object({ actor: Actor });
export const RuleCreateRequest = z.object({ actor: Actor, rule: ApprovalRuleInput });
export const RuleUpdateRequest = z.object({ actor: Actor, id: Id, patch: ApprovalRulePatch });
export const RuleDeleteRequest = z.object({ actor: Actor, id: Id });
/**
 * A test of a named session carries what the gate is asked with for a call of it (set by the
 * gateway from `session.gate_context`, never by the caller): its agent, source and group in the
 * fields above, its RunContext paths and whether a Require is rejected unasked.
 */
export const RuleTestRequest = RuleTestInput.extend({
  actor: Actor,
  run_context: GateRunContext.optional(),
  auto_deny: z.boolean().optional(),
});
export const InboxRequest = z.object({ actor: Actor });
export const BypassListRequest = z.object({ actor: Actor, session_id: Id.optional() });
export const BypassCreateRequest = CreateBypassInput.extend({ actor: Actor });
export const BypassDeleteRequest = z.object({ actor: Actor, id: Id });
export const AuditRequest = z.object({
  actor: Actor,
  session_id: Id.optional(),
  page: z.number().int().min(1),
  per_page: z.number().int().min(1).max(200),
});
export const ToolsCatalogRequest = z.object({ actor: Actor });
/** The most tool calls one `approval.decisions` asks about: a history page's (at most 200 rows) calls, bounded. */
export const DECISIONS_MAX_CALLS = 1000;
/**
 * How the answered approvals of these calls of the caller's session were answered (the chat
 * history's settled cards): a call of another user's session, or one that never asked, is left out.
 */
export const DecisionsRequest = z.object({
  actor: Actor,
  session_id: Id,
  tool_call_ids: z.array(Id).max(DECISIONS_MAX_CALLS),
});
export const DecisionsReply = z.object({
  items: z.array(
    z.object({
      tool_call_id: Id,
      request_id: Id,
      status: z.enum(['approved', 'rejected', 'cancelled']),
      decision: HumanDecision.optional(),
    }),
  ),
});
export type DecisionsReply = z.infer<typeof DecisionsReply>;
/** `/new` (session reset): revokes the session's bypasses and cancels its pending requests. */
export const ResetSessionRequest = z.object({ actor: Actor, session_id: Id });
export const ResetSessionReply = z.object({ revoked: z.number().int(), cancelled: z.array(Id) });
/**
 * Called by the session worker each round with the tools it would offer: answers the ones the
 * model may see (a tool whose first applicable rule is an unconditional Deny is hidden) and
 * records every offered name in the known-tools catalog (in the background).
 */
export const VisibleToolsRequest = z.object({
  actor: Actor,
  session_id: Id,
  agent_id: z.string(),
  source: z.string(),
  security_group: z.string().optional(),
  tools: z.array(z.string().min(1).max(256)).max(2000),
});
export const VisibleToolsReply = z.object({ visible: z.array(z.string()) });
export const Deleted = z.object({ deleted: z.literal(true) });
export const Created = z.object({ id: Id });
