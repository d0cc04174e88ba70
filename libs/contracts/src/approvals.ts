import { z } from 'zod';
import { Actor, Id, Role, StoredText, Timestamp } from './common';
import { GateRunContext } from './run-context';
import {
  ApprovalChannel,
  ApprovalPreview,
  BypassScope,
  EditedArguments,
  HumanDecision,
  LandsAt,
  SessionApprovalScope,
} from './ws';

/**
 * Approval service: REST bodies of PROTOCOL.md "Approvals and inbox" and the NATS payloads behind
 * them. The subjects are appended to `SUBJECTS` in subjects.ts.
 */

export const RuleAction = z.enum(['allow', 'deny', 'require']);
const Pattern = StoredText(512).min(1);

/** The longest rule name, in characters. */
export const RULE_NAME_MAX = 80;
/** What a one-line name cannot hold: a control character, a line or paragraph separator. */
const NOT_IN_A_NAME = /[\p{Cc}\u2028\u2029]/u;
const NOT_IN_A_NAME_G = new RegExp(NOT_IN_A_NAME.source, 'gu');
/**
 * What a rule is called wherever a decision names it (the gate's reason, the audit, the inbox):
 * trimmed, one line, 1 to {@link RULE_NAME_MAX} characters. Names need not be unique: a decision
 * also carries the rule's id.
 */
export const RuleName = StoredText(RULE_NAME_MAX * 2)
  .trim()
  .min(1, 'must not be empty')
  .refine((t) => [...t].length <= RULE_NAME_MAX, `must be at most ${RULE_NAME_MAX} characters`)
  .refine((t) => !NOT_IN_A_NAME.test(t), 'must be one line without control characters');

export const ApprovalRuleInput = z.object({
  /** **(new)** Absent on create: `ruleName` of the other fields. */
  name: RuleName.optional(),
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
  /** **(new)** What decisions call it (`RuleName`). */
  name: z.string(),
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

/**
 * `POST /api/approval/rules/test`. `as_user_id` / `as_group_id` (admins): evaluate as the gate does
 * for a session of that user (their groups' security groups, their role), or of a member of that
 * group alone; neither with `session_id` (a session is tested as its owner).
 */
export const RuleTestInput = z.object({
  tool_name: StoredText(256).min(1),
  arguments: z.record(z.string(), z.unknown()).default({}),
  agent_id: StoredText(128).optional(),
  source: StoredText(32).optional(),
  session_id: Id.optional(),
  security_group: StoredText(128).optional(),
  as_user_id: Id.optional(),
  as_group_id: Id.optional(),
});
export type RuleTestInput = z.infer<typeof RuleTestInput>;
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
  preview: ApprovalPreview.optional(),
  /** **(new)** Where the call's path lands when that differs from the path it names (`LandsAt`). */
  lands_at: LandsAt,
  /**
   * **(new)** What "approve for this session" opens for this call (`bypass_scope: "call"`): its
   * narrow scopes and the default lifetime in seconds. Absent when the call cannot be narrowed
   * (a command line the gate cannot read): then only a plain approval is offered.
   */
  session_approval: z.object({ scopes: z.array(BypassScope).min(1), secs: z.number().int().positive() }).optional(),
  created_at: Timestamp,
  /** **(new)** The conversation's title (null until it has one; absent when the session worker cannot answer). */
  session_title: z.string().nullable().optional(),
  /** **(new)** The agent that asked: its id and display name. */
  agent: z.object({ id: z.string(), name: z.string() }).optional(),
  /**
   * **(new)** The end of the last assistant text before the call, at most {@link CONTEXT_EXCERPT_MAX}
   * characters (`…` first when cut); absent when the agent said nothing before it.
   */
  context: z.string().optional(),
  /** **(new)** The rule whose Require asked the human, with its name; absent when no rule did (the default). */
  rule: z.object({ id: Id, name: z.string() }).optional(),
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
  /** **(new)** The conversation's title and the agent that asks, as for an approval. */
  session_title: z.string().nullable().optional(),
  agent: z.object({ id: z.string(), name: z.string() }).optional(),
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

export const AuditDecision = z.enum(['allow', 'deny', 'require', 'approve', 'reject', 'answer']);
export type AuditDecision = z.infer<typeof AuditDecision>;
/** The most audit rows one page answers. */
export const AUDIT_PAGE_MAX = 200;
/** An ISO 8601 instant with its offset (`2026-12-07T10:00:00Z`, `…+01:00`): the bounds of an audit filter. */
const Instant = z.iso.datetime({ offset: true });
/**
 * `GET /api/approval/audit`: filters (all optional, combined with AND) and keyset paging, newest
 * first: `before` is the id of the last row of the previous page. `user_id` other than the
 * caller's is for admins (403 otherwise).
 */
/** The audit's filters, as `GET /approval/audit` reads them and `approval.audit` carries them. */
const AuditFilters = z.object({
  session_id: Id.optional(),
  user_id: Id.optional(),
  /** The tool's exact name. */
  tool: StoredText(256).min(1).optional(),
  decision: AuditDecision.optional(),
  /** Rows at or after this instant. */
  since: Instant.optional(),
  /** Rows before this instant. */
  until: Instant.optional(),
  before: Id.optional(),
});
export const AuditQuery = AuditFilters.extend({
  limit: z.coerce.number().int().min(1).max(AUDIT_PAGE_MAX).default(50),
}).refine((q) => !q.since || !q.until || Date.parse(q.since) < Date.parse(q.until), {
  message: 'until must be later than since',
  path: ['until'],
});
export type AuditQuery = z.infer<typeof AuditQuery>;
export const AuditItem = z.object({
  id: Id,
  at: Timestamp,
  /** **(new)** Whose session the decision was about. */
  user_id: Id,
  session_id: Id.nullable(),
  /** **(new)** The conversation's title (null: untitled, or the session is gone). */
  session_title: z.string().nullable().optional(),
  tool_call_id: Id.nullable(),
  tool_name: z.string(),
  args_digest: z.string(),
  decision: AuditDecision,
  by: GateBy,
  actor_user_id: Id.optional(),
  /** Where a human answered (`by: "human"`). */
  channel: ApprovalChannel.optional(),
  rule_id: Id.optional(),
  /** **(new)** The rule's name as it is now (a built-in rule's from the code), or "a deleted rule" when it no longer exists (the note keeps the name it had when it decided). */
  rule_name: z.string().optional(),
  note: z.string().optional(),
  /**
   * **(new)** The human approved the call with edited arguments: their digest and a unified diff
   * of each changed argument (original → edited). `args_digest` stays the original's.
   */
  edit: z.object({ args_digest: z.string(), diff: z.string() }).optional(),
});
export type AuditItem = z.infer<typeof AuditItem>;
export const AuditList = z.object({ items: z.array(AuditItem), has_more: z.boolean() });
export type AuditList = z.infer<typeof AuditList>;

export const DELETED_RULE_NAME = 'a deleted rule';
/**
 * A rule's default name, when it is created without one (and what the rules stored before names
 * were had): its note's first line, or what it matches; one line, at most {@link RULE_NAME_MAX}
 * characters (`…` last when cut).
 */
export function ruleName(r: {
  action: string;
  tool_pattern: string;
  path_pattern?: string | null;
  command_pattern?: string | null;
  note?: string | null;
}): string {
  const note = oneLine(r.note?.split('\n')[0] ?? '');
  const name =
    note ||
    oneLine(
      `${r.action} ${r.tool_pattern}${r.command_pattern ? ` \`${r.command_pattern}\`` : ''}${r.path_pattern ? ` on ${r.path_pattern}` : ''}`,
    );
  const chars = [...name];
  return chars.length > RULE_NAME_MAX ? `${chars.slice(0, RULE_NAME_MAX - 1).join('')}…` : name;
}
const oneLine = (t: string): string => t.replace(NOT_IN_A_NAME_G, ' ').trim();

/** The longest excerpt of the agent's words an inbox item carries (`context`). */
export const CONTEXT_EXCERPT_MAX = 280;

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
export const RuleTestRequest = RuleTestInput.omit({ as_user_id: true, as_group_id: true }).extend({
  actor: Actor,
  run_context: GateRunContext.optional(),
  auto_deny: z.boolean().optional(),
  /** The security groups of the tested user's groups (the session owner's, or the user or group tested as). */
  security_groups: z.array(StoredText(128)).max(200).optional(),
  /** The tested user's role (whose sessions the built-in rules judge); the actor's when absent. */
  owner_role: Role.optional(),
});
export const InboxRequest = z.object({ actor: Actor });
export const BypassListRequest = z.object({ actor: Actor, session_id: Id.optional() });
export const BypassCreateRequest = CreateBypassInput.extend({ actor: Actor });
export const BypassDeleteRequest = z.object({ actor: Actor, id: Id });
export const AuditRequest = AuditFilters.extend({
  actor: Actor,
  limit: z.number().int().min(1).max(AUDIT_PAGE_MAX),
});
/** Answered by the approval service: the page, each row with its rule's name. */
export const AuditReply = z.object({ items: z.array(AuditItem.omit({ session_title: true })), has_more: z.boolean() });
/** The most calls one `session.call_context` asks about: an inbox's bound. */
export const CALL_CONTEXT_MAX = 1000;
/**
 * What the inbox and the audit show of a call's conversation (`session.call_context`, answered by
 * the session worker): for each session of the caller's (an admin: any), its title and agent and,
 * for a named tool call, the end of the last assistant text before it. Other sessions are left out.
 */
export const CallContextRequest = z.object({
  actor: Actor,
  items: z.array(z.object({ session_id: Id, tool_call_id: Id.optional() })).max(CALL_CONTEXT_MAX),
});
export const CallContextReply = z.object({
  items: z.array(
    z.object({
      session_id: Id,
      tool_call_id: Id.optional(),
      title: z.string().nullable(),
      agent: z.object({ id: z.string(), name: z.string() }),
      context: z.string().optional(),
    }),
  ),
});
export type CallContextReply = z.infer<typeof CallContextReply>;
export const ToolsCatalogRequest = z.object({ actor: Actor });
/** The most tool calls one `approval.decisions` asks about: a history page's (at most 200 rows) calls, bounded. */
export const DECISIONS_MAX_CALLS = 1000;
/**
 * The most preview text (old and new content, in characters) one `approval.decisions` reply
 * carries, so that it stays well within one NATS message: the previews of the newest calls come
 * first; an older call past the bound shows its arguments instead of its diff.
 */
export const DECISIONS_MAX_PREVIEW_CHARS = 256 * 1024;
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
      /** The file change the card showed; left out past `DECISIONS_MAX_PREVIEW_CHARS` a reply. */
      preview: ApprovalPreview.optional(),
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
  /** As in `approval.check`: the security groups of the owner's groups. */
  security_groups: z.array(z.string()).max(64).optional(),
  tools: z.array(z.string().min(1).max(256)).max(2000),
});
export const VisibleToolsReply = z.object({ visible: z.array(z.string()) });
export const Deleted = z.object({ deleted: z.literal(true) });
export const Created = z.object({ id: Id });

// ---------------------------------------------------------------- action tokens (Approve / Reject from a push notification)

/**
 * An approval's action token as it travels (base64url). It stands for one pending call of one
 * user: single-use, short-lived, and refused when the call's tool or arguments are no longer the
 * ones it was minted for. Never a session credential.
 */
export const ActionToken = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[\w-]+$/, 'an action token');

/**
 * `POST /api/approvals/actions` (public: the token is the credential), and the gateway's
 * `approval.action.redeem`: uses the token once, then resolves as the user it was minted for.
 */
export const ApprovalActionRequest = z.object({ token: ActionToken, action: z.enum(['approve', 'reject']) }).strict();
export type ApprovalActionRequest = z.infer<typeof ApprovalActionRequest>;

/** What the notification then says: the call was approved or rejected. */
export const ApprovalActionResult = z.object({
  status: z.enum(['approved', 'rejected']),
  tool_name: z.string(),
});
export type ApprovalActionResult = z.infer<typeof ApprovalActionResult>;

/**
 * `approval.action_token.mint` (the scheduler, per push delivery): a fresh token for a pending
 * approval of `user_id`; `not_found` for a foreign or unknown request, `conflict` once answered.
 */
export const ActionTokenMintRequest = z.object({ request_id: Id, user_id: z.string().uuid() });
export const ActionTokenMinted = z.object({ token: ActionToken, expires_at: Timestamp });
export type ActionTokenMinted = z.infer<typeof ActionTokenMinted>;
