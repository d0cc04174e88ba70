import { z } from 'zod';
import { AGENT_SUBJECTS, AgentId } from './agents';
import { BUDGET_SUBJECTS } from './budgets';
import { GROUP_SUBJECTS } from './groups';
import {
  Actor,
  Attachment,
  ClientMessageId,
  Delivery,
  Id,
  Role,
  Source,
  SourceFilter,
  StoredText,
  Timestamp,
} from './common';
import { replyOf } from './reply';
import {
  ChatMessages,
  ExportFormat,
  SessionDetail,
  SessionExport,
  SessionList,
  SessionSearchList,
  SessionSearchText,
  SessionSummary,
} from './rest';
import {
  FileReadReply,
  FileReadRequest,
  ToolImageReply,
  ToolImageRequest,
  FileUploadReply,
  FileUploadRequest,
  MemoryTurnReply,
  MemoryTurnRequest,
} from './tool-runner';
import * as M from './mcp';
import {
  ApprovalPreview,
  EditedArguments,
  EphemeralEventSchema,
  LandsAt,
  SessionApprovalScope,
  ApprovalChannel,
  SessionEventSchema,
  TurnWaitingSchema,
  UserEventSchema,
} from './ws';
import * as A from './approvals';
import * as L from './llm';
import * as U from './usage';
import * as S from './scheduler';
import * as N from './notify';
import * as RC from './run-context';

export { replyOf } from './reply';

// ---------------------------------------------------------------- session worker

export const SubmitMessage = z.object({
  actor: Actor,
  source: Source,
  client_message_id: ClientMessageId,
  /** Chat content is kept verbatim (NUL and lone surrogates too): the pg-text codec stores it losslessly. */
  content: z.string(),
  attachments: z.array(Attachment).optional(),
  delivery: Delivery.default('steer'),
  is_synthetic: z.boolean().default(false),
  /**
   * The conversation the message goes to, one of the actor's chat conversations (interactive, not
   * a job's run; else `not_found`); absent: the active session of (actor, source). The
   * OpenAI-compatible endpoint names the conversation.
   */
  session_id: Id.optional(),
});
export const SubmitMessageReply = z.object({
  session_id: Id,
  message_id: Id,
  client_message_id: z.string(),
  duplicate: z.boolean(),
  /**
   * The route of the worker that took the session's lease with this message (carry affinity, see
   * `directSubject`): the gateway sends the conversation's next submit there, where the history is
   * in memory. Absent when the answering worker took no lease (another one drives the session).
   */
  worker: z.string().optional(),
});
/** Earlier messages a conversation opened by `session.open` starts with, at most. */
export const OPEN_HISTORY_MAX = 1000;
/**
 * `session.open`: a new conversation of the actor, not the active one of its source (its client
 * names it on every message), answered by `agent_id`, whose history is `history` (stored as the
 * conversation's earlier rows, answered by no turn) and whose RunContext prompt parts are
 * `system_prompt`. Counted against the user's cap on conversations.
 */
export const OpenSessionRequest = z.object({
  actor: Actor,
  source: Source,
  agent_id: AgentId,
  system_prompt: z.array(StoredText(10_000)).max(20),
  history: z
    .array(z.object({ role: z.enum(['user', 'assistant']), content: StoredText(512 * 1024) }))
    .max(OPEN_HISTORY_MAX),
});
export const OpenSessionReply = z.object({ session_id: Id });
export const ActiveSessionRequest = z.object({ actor: Actor, source: Source, create_new: z.boolean().default(false) });
export const ActiveSessionReply = z.object({ session_id: Id, created: z.boolean() });
export const GetSessionRequest = z.object({ actor: Actor, session_id: Id });
export const ListSessionsRequest = z.object({
  actor: Actor,
  source: SourceFilter.optional(),
  page: z.number().int().min(1),
  per_page: z.number().int().min(1).max(100),
});
/** Without `after_seq`: only the state (running, waiting, last_seq). */
export const MessagesRequest = z.object({
  actor: Actor,
  source: Source,
  before: Id.optional(),
  limit: z.number().int().min(1).max(200),
});
/**
 * `session.admin.get` / `session.admin.messages`: any user's conversation read by an admin (the
 * worker refuses any other actor with `forbidden`). Read-only, so idempotent. The summary names
 * its owner (`user_id`); the messages page is the one `session.messages` gives its owner.
 */
export const AdminSessionRequest = z.object({ actor: Actor, session_id: Id });
export const AdminSessionReply = SessionSummary.extend({ user_id: Id });
export type AdminSessionReply = z.infer<typeof AdminSessionReply>;
export const AdminMessagesRequest = z.object({
  actor: Actor,
  session_id: Id,
  before: Id.optional(),
  limit: z.number().int().min(1).max(200),
});
export const ReplayRequest = z.object({
  actor: Actor,
  session_id: Id,
  after_seq: z.number().int().nonnegative().optional(),
});
/**
 * One page of a session's stored events after `after_seq`, oldest first, at most
 * `REPLAY_PAGE_EVENTS`. `last_seq` is the page's cursor (the seq of its last event while
 * `has_more`; otherwise the session's last seq, of which `running` / `waiting` are the state).
 */
export const ReplayReply = z.object({
  events: z.array(SessionEventSchema),
  last_seq: z.number().int().nonnegative(),
  running: z.boolean(),
  waiting: TurnWaitingSchema.optional(),
  /** With `waiting: "turn_slot"`: the user's cap on concurrent turns. */
  limit: z.number().int().positive().optional(),
  /** More events follow: ask again after `last_seq`. */
  has_more: z.boolean().optional(),
});
/** Events one `session.replay` answer carries at most. */
export const REPLAY_PAGE_EVENTS = 200;
/** Bytes of event JSON after which a page ends (at least one event a page), well under NATS' 1 MiB. */
export const REPLAY_PAGE_BYTES = 256 * 1024;
export const CancelRequest = z.object({ actor: Actor, session_id: Id });

// Conversations: every request names a session of the actor; a foreign id is `not_found`.
export const RenameSessionBusRequest = z.object({ actor: Actor, session_id: Id, title: StoredText(200).min(1) });
export const RenameSessionReply = z.object({ id: Id, title: z.string() });
/** Deletes the session and every row it owns (events included), its running turn stopped first. */
export const DeleteSessionRequest = z.object({ actor: Actor, session_id: Id });
export const DeleteSessionReply = z.object({ deleted: z.boolean() });
export const SearchSessionsRequest = z.object({
  actor: Actor,
  q: SessionSearchText,
  source: SourceFilter.optional(),
  page: z.number().int().min(1),
  per_page: z.number().int().min(1).max(100),
});
export const ExportSessionRequest = z.object({ actor: Actor, session_id: Id, format: ExportFormat });
/** `content`: the document (Markdown text, or the JSON export as an object). */
export const ExportSessionReply = z.discriminatedUnion('format', [
  z.object({ format: z.literal('markdown'), filename: z.string(), content: z.string() }),
  z.object({ format: z.literal('json'), filename: z.string(), content: SessionExport }),
]);
/** Makes the session the active one of its source; the sockets of that source get `new_session`. */
export const ActivateSessionRequest = z.object({ actor: Actor, session_id: Id });
export const ActivateSessionReply = z.object({ session_id: Id, source: z.string() });
/**
 * Regenerate (no `message_id`: the last user message) or edit-and-resend (`message_id`, `content`)
 * in the active session of `source`: the rows from that user message on are superseded and the
 * message (the edited text) enters again as `client_message_id`. `conflict` while a turn runs.
 */
export const RewindRequest = z.object({
  actor: Actor,
  source: Source,
  client_message_id: ClientMessageId,
  message_id: Id.optional(),
  content: z
    .string()
    .min(1)
    .max(512 * 1024)
    .optional(),
});
export const CancelReply = z.object({ cancelled: z.boolean() });
export const WakeSession = z.object({ session_id: Id, reason: z.string() });

// ---------------------------------------------------------------- approval service

/**
 * Where the paths of a call land (`tools.resolve`), one entry per path the shared resolver names
 * (`effectiveCallPaths`, in its order): the `/workspace/…` path the tool runner's jail reaches with
 * symlinks inside the workspace followed, or the memory path itself; null where the runner cannot
 * resolve it (outside the workspace through a symlink, an I/O error, the runner unreachable).
 */
export const LandingPaths = z.array(z.string().max(4096).nullable()).max(16);
export type LandingPaths = z.infer<typeof LandingPaths>;

export const ApprovalCheckRequest = z.object({
  actor: Actor,
  session_id: Id,
  /** The call being checked and its turn (the id of the message that started it): for logs and the audit. */
  tool_call_id: Id.optional(),
  turn_id: Id.optional(),
  agent_id: z.string(),
  source: z.string(),
  /** The admin-set security group of the session (its override), if any. */
  security_group: z.string().optional(),
  /**
   * The security groups the session owner's groups bring (read at the turn's start): the gate
   * evaluates the rules of these and of `security_group`, then the default rules.
   */
  security_groups: z.array(z.string()).max(64).optional(),
  tool_name: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  /**
   * The session's RunContext: its working directory is the base of relative paths (the shared
   * resolver, as in the tool runner) and its pre-authorised paths relax Require to Allow (never
   * Deny). The session worker sends it on every check.
   */
  run_context: z
    .object({
      working_directory: z.string().max(4096).nullable().optional(),
      allow_fs_reads: z.array(z.string().max(4096)).max(256).optional(),
      allow_fs_writes: z.array(z.string().max(4096)).max(256).optional(),
    })
    .optional(),
  /**
   * Where the call's paths land, as the tool runner resolved them (`tools.resolve`). Path rules,
   * the RunContext's pre-authorised paths and directory-scoped session approvals judge both the
   * lexical path and this one: a deny on either denies, an allow needs both. Absent, or an entry
   * null, for a call with paths: the landing is unknown, and nothing that allows by path allows it.
   */
  landing: LandingPaths.optional(),
  /**
   * The session cannot ask a human (a headless cron or tic run): a Require that neither the
   * RunContext nor a bypass relaxes is answered `deny`, audited `by: auto_deny`.
   */
  auto_deny: z.boolean().optional(),
});
export const ApprovalDecision = z.enum(['allow', 'deny', 'require']);
export type ApprovalDecision = z.infer<typeof ApprovalDecision>;
export const ApprovalCheckReply = z.object({
  decision: ApprovalDecision,
  rule_id: Id.optional(),
  reason: z.string(),
  /** What decided (as audited); `auto_deny`: refused because the session cannot ask a human. */
  by: A.GateBy.optional(),
});

/** `expected_base_hash` of a write previewed while its file did not exist (a preview without `base_hash`). */
export const ABSENT_FILE_HASH = 'absent';

/**
 * Registers a human request (approval or clarification) for a tool call. Idempotent by
 * `request_id`: a recovery re-asks with the same id and gets the existing request (and its answer,
 * if one came meanwhile).
 */
export const ApprovalRegisterRequest = z.object({
  actor: Actor,
  request_id: Id,
  kind: z.enum(['approval', 'clarification']),
  tool_call_id: Id,
  session_id: Id,
  /** The turn that asks (the id of the message that started it): for logs. */
  turn_id: Id.optional(),
  /**
   * The job run whose session asks (a cron or async job's session): its notification is
   * `job_needs_human` instead of `approval_requested` / `question_asked`, never both.
   */
  job_run_id: Id.optional(),
  source: z.string(),
  tool_name: z.string(),
  arguments: z.unknown(),
  preview: ApprovalPreview.optional(),
  question: z.object({ title: z.string(), question: z.string(), suggested_answers: z.array(z.string()) }).optional(),
  /** Where the call's path lands when that differs from the path it names (`LandsAt`, ws.ts). */
  lands_at: LandsAt,
  /**
   * What the gate judged the call with (its agent, group and RunContext): an edit of the call is
   * judged again with exactly these. A request registered without it cannot be edited.
   */
  gate_context: z
    .object({
      agent_id: z.string(),
      security_group: z.string().optional(),
      security_groups: ApprovalCheckRequest.shape.security_groups,
      run_context: ApprovalCheckRequest.shape.run_context,
    })
    .optional(),
});
export const HumanRequestStatus = z.enum(['pending', 'approved', 'rejected', 'answered', 'cancelled']);
export type HumanRequestStatus = z.infer<typeof HumanRequestStatus>;
export const HumanRequestState = z.object({
  request_id: Id,
  tool_call_id: Id,
  session_id: Id,
  status: HumanRequestStatus,
  note: z.string().nullable(),
  answer: z.string().nullable(),
  /**
   * Approved with edited arguments: the arguments the call runs with and a unified diff of each
   * changed argument (the first lines of the model's tool result).
   */
  edit: z.object({ arguments: z.record(z.string(), z.unknown()), diff: z.string() }).optional(),
});
export type HumanRequestState = z.infer<typeof HumanRequestState>;
export const ApprovalGetRequest = z.object({ actor: Actor, request_id: Id });
/**
 * A human's answer, from any surface (WS, inbox, the chat card by tool call id). First answer wins:
 * a second one is `conflict`; a foreign or unknown id is `not_found`. Committed, then announced on
 * `approval.resolved.<sessionId>` and the session is woken.
 */
export const ApprovalResolveRequest = z
  .object({
    actor: Actor,
    request_id: Id.optional(),
    tool_call_id: Id.optional(),
    action: z.enum(['approve', 'reject', 'answer']),
    note: StoredText(4000).optional(),
    answer: StoredText(64 * 1024).optional(),
    bypass_secs: z.number().int().nonnegative().optional(),
    bypass_scope: SessionApprovalScope.optional(),
    /** Approve with these arguments instead (`EditedArguments`, ws.ts). */
    arguments: EditedArguments.optional(),
    /** Where the human answered (set by the gateway from the surface, never by a client). */
    channel: ApprovalChannel.optional(),
  })
  .refine((r) => !!r.request_id !== !!r.tool_call_id, 'exactly one of request_id and tool_call_id');
/** Ends every pending request of a session as cancelled (/stop, interrupt, job kill, session reset). */
export const ApprovalCancelSessionRequest = z.object({ actor: Actor, session_id: Id, reason: z.string() });
export const ApprovalCancelSessionReply = z.object({ cancelled: z.array(Id) });

// ---------------------------------------------------------------- tool runner

export const ToolExecRequest = z.object({
  actor: Actor,
  session_id: Id,
  tool_call_id: Id,
  /** The turn that runs the call (the id of the message that started it): for logs. */
  turn_id: Id.optional(),
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  /** The session's working directory (RunContext): the base of relative paths when the call has no `workdir`. */
  working_directory: z.string().max(4096).nullish(),
  /**
   * A write approved on a preview: the preview's `base_hash` (`ABSENT_FILE_HASH` for a new file).
   * When the file's hash differs at write time, nothing is written and the reply is `stale`.
   */
  expected_base_hash: z.string().optional(),
  /**
   * Where the approval gate judged the call's paths to land (`tools.resolve`, then `approval.check`).
   * A file write given one lands exactly there or fails: the runner resolves the path again, refuses
   * when it leads elsewhere now, and walks the judged path opening no symlink.
   */
  judged_landing: LandingPaths.optional(),
});
export const ToolExecReply = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('done'),
    result: z.string(),
    result_type: z.string(),
    file_changed: z.string().optional(),
    /** `open_file`: the workspace path to show the user (an `open_file` event). */
    open_file: z.string().optional(),
  }),
  z.object({ status: z.literal('failed'), error: z.string() }),
  z.object({ status: z.literal('cancelled') }),
  /** The file changed since the preview the human approved (`expected_base_hash`): nothing was written. */
  z.object({ status: z.literal('stale'), error: z.string() }),
]);
export const ToolCancel = z.object({ tool_call_id: Id });
/** The diff an approval card shows, computed by the tool runner from the user's workspace exactly as the tool would write. */
export const ToolPreviewRequest = ToolExecRequest.omit({ expected_base_hash: true, judged_landing: true });
/**
 * `tools.resolve` (queue `tool-runner`): where a call's paths land (see `LandingPaths`), computed by
 * the jail's own resolution (the one its writes use) before the call is judged. Reads only. The same
 * fields as a preview, under the name of its own subject.
 * @alias
 */
export const ToolResolveRequest = ToolPreviewRequest;
export const ToolResolveReply = z.object({ landing: LandingPaths });
/**
 * `refused`: the write can never run as asked (its path resolves outside the workspace, through a
 * symlink too): no human is asked, the call ends as a tool error with this sentence.
 */
export const ToolPreviewReply = z.object({ preview: ApprovalPreview.nullable(), refused: z.string().optional() });

// ---------------------------------------------------------------- gateway (owner of the users table)

/**
 * `user.standing` (queue `gateway`): a user's standing now, read from the users table at the
 * moment of asking. The scheduler asks it at every fire of a job (cron, tic, async): a job runs
 * with its owner's current role, and not at all for a disabled or deleted owner. Read-only, so
 * idempotent.
 */
export const UserStandingRequest = z.object({ user_id: Id });
export const UserStandingReply = z.object({
  /** `active`: may act; `disabled`: an admin disabled the account; `deleted`: no such user. */
  standing: z.enum(['active', 'disabled', 'deleted']),
  /** The current role; null for a deleted user. */
  role: Role.nullable(),
  /** The account's e-mail address (where e-mail notifications go); absent for a deleted user. */
  email: z.string().optional(),
});
export type UserStandingReply = z.infer<typeof UserStandingReply>;

/**
 * `user.presence` (queue `gateway`): whether the user has a WebSocket open on any gateway replica
 * now, read from the replicas' shared socket places in Redis (each renewed by the replica holding
 * it, gone within a lease when that replica dies). A gateway that cannot read them answers an
 * error; the asker then treats the user as away. Read-only, so idempotent.
 */
export const UserPresenceRequest = z.object({ user_id: Id });
export const UserPresenceReply = z.object({ online: z.boolean() });
export type UserPresenceReply = z.infer<typeof UserPresenceReply>;

/** Users one `user.page` answer lists at most. */
export const USER_PAGE_MAX = 500;
/**
 * `user.page` (queue `gateway`): the users whose id sorts after `after` (from the first when
 * absent), in id order, at most `limit`. The scheduler walks it a page per pass to give every user
 * their periodic tic job. `next`: the last id listed when the page was full, else null (the end).
 * Read-only, so idempotent.
 */
export const UserPageRequest = z.object({
  after: Id.nullable().optional(),
  limit: z.number().int().min(1).max(USER_PAGE_MAX),
});
export const UserPageReply = z.object({
  items: z.array(z.object({ user_id: Id, role: Role })),
  next: Id.nullable(),
});
export type UserPageReply = z.infer<typeof UserPageReply>;

/**
 * The one map from subject to payload. Requests have `request` and `reply`; published subjects
 * have `message`. Subjects with a `<…>` part are built by the helpers below.
 */
export const SUBJECTS = {
  ...AGENT_SUBJECTS,
  ...GROUP_SUBJECTS,
  ...BUDGET_SUBJECTS,
  // `direct`: each worker also answers it alone on `session.submit.<route>` (carry affinity).
  'session.submit': {
    request: SubmitMessage,
    reply: replyOf(SubmitMessageReply),
    queue: 'session-worker',
    direct: true,
  },
  'session.open': { request: OpenSessionRequest, reply: replyOf(OpenSessionReply), queue: 'session-worker' },
  'session.active': { request: ActiveSessionRequest, reply: replyOf(ActiveSessionReply), queue: 'session-worker' },
  'session.get': { request: GetSessionRequest, reply: replyOf(SessionDetail), queue: 'session-worker' },
  'session.list': { request: ListSessionsRequest, reply: replyOf(SessionList), queue: 'session-worker' },
  'session.messages': { request: MessagesRequest, reply: replyOf(ChatMessages), queue: 'session-worker' },
  'session.admin.get': {
    request: AdminSessionRequest,
    reply: replyOf(AdminSessionReply),
    queue: 'session-worker',
  },
  'session.admin.messages': {
    request: AdminMessagesRequest,
    reply: replyOf(ChatMessages),
    queue: 'session-worker',
  },
  'session.replay': { request: ReplayRequest, reply: replyOf(ReplayReply), queue: 'session-worker' },
  'session.cancel': { request: CancelRequest, reply: replyOf(CancelReply), queue: 'session-worker' },
  'session.rename': {
    request: RenameSessionBusRequest,
    reply: replyOf(RenameSessionReply),
    queue: 'session-worker',
  },
  'session.delete': { request: DeleteSessionRequest, reply: replyOf(DeleteSessionReply), queue: 'session-worker' },
  'session.search': { request: SearchSessionsRequest, reply: replyOf(SessionSearchList), queue: 'session-worker' },
  'session.export': { request: ExportSessionRequest, reply: replyOf(ExportSessionReply), queue: 'session-worker' },
  'session.activate': {
    request: ActivateSessionRequest,
    reply: replyOf(ActivateSessionReply),
    queue: 'session-worker',
  },
  'session.rewind': { request: RewindRequest, reply: replyOf(SubmitMessageReply), queue: 'session-worker' },
  'session.run_context.get': {
    request: RC.RunContextGetRequest,
    reply: replyOf(RC.RunContextDto),
    queue: 'session-worker',
  },
  'session.run_context.set': {
    request: RC.RunContextSetRequest,
    reply: replyOf(RC.RunContextDto),
    queue: 'session-worker',
  },
  'session.gate_context': {
    request: RC.GateContextRequest,
    reply: replyOf(RC.GateContextReply),
    queue: 'session-worker',
  },
  'session.call_context': {
    request: A.CallContextRequest,
    reply: replyOf(A.CallContextReply),
    queue: 'session-worker',
  },
  'llm.clients': { request: L.LlmClientsRequest, reply: replyOf(L.LlmClientList), queue: 'session-worker' },
  'llm.pin': { request: L.LlmPinRequest, reply: replyOf(L.LlmPinReply), queue: 'session-worker' },
  'llm.command': { request: L.LlmCommandRequest, reply: replyOf(L.LlmCommandReply), queue: 'session-worker' },
  'usage.report': { request: U.UsageReportRequest, reply: replyOf(U.UsageReportReply), queue: 'session-worker' },
  'approval.check': { request: ApprovalCheckRequest, reply: replyOf(ApprovalCheckReply), queue: 'approval-service' },
  'approval.register': {
    request: ApprovalRegisterRequest,
    reply: replyOf(HumanRequestState),
    queue: 'approval-service',
  },
  'approval.resolve': { request: ApprovalResolveRequest, reply: replyOf(HumanRequestState), queue: 'approval-service' },
  'approval.get': { request: ApprovalGetRequest, reply: replyOf(HumanRequestState), queue: 'approval-service' },
  'approval.cancel_session': {
    request: ApprovalCancelSessionRequest,
    reply: replyOf(ApprovalCancelSessionReply),
    queue: 'approval-service',
  },
  'tools.exec': { request: ToolExecRequest, reply: replyOf(ToolExecReply), queue: 'tool-runner' },
  'tools.preview': { request: ToolPreviewRequest, reply: replyOf(ToolPreviewReply), queue: 'tool-runner' },
  'tools.resolve': { request: ToolResolveRequest, reply: replyOf(ToolResolveReply), queue: 'tool-runner' },
  'tools.memory_turn': { request: MemoryTurnRequest, reply: replyOf(MemoryTurnReply), queue: 'tool-runner' },
  'files.upload': { request: FileUploadRequest, reply: replyOf(FileUploadReply), queue: 'tool-runner' },
  'files.read': { request: FileReadRequest, reply: replyOf(FileReadReply), queue: 'tool-runner' },
  'tools.image': { request: ToolImageRequest, reply: replyOf(ToolImageReply), queue: 'tool-runner' },
  'mcp.servers.list': { request: M.McpServersListRequest, reply: replyOf(M.McpServerList), queue: 'tool-runner' },
  'mcp.servers.create': { request: M.McpServersCreateRequest, reply: replyOf(M.McpServerDto), queue: 'tool-runner' },
  'mcp.servers.update': { request: M.McpServersUpdateRequest, reply: replyOf(M.McpServerDto), queue: 'tool-runner' },
  'mcp.servers.delete': {
    request: M.McpServersDeleteRequest,
    reply: replyOf(M.McpServersDeleteReply),
    queue: 'tool-runner',
  },
  'mcp.catalog': { request: M.McpCatalogRequest, reply: replyOf(M.McpCatalogReply), queue: 'tool-runner' },
  'approval.reset_session': {
    request: A.ResetSessionRequest,
    reply: replyOf(A.ResetSessionReply),
    queue: 'approval-service',
  },
  'approval.visible_tools': {
    request: A.VisibleToolsRequest,
    reply: replyOf(A.VisibleToolsReply),
    queue: 'approval-service',
  },
  'approval.tools': { request: A.ToolsCatalogRequest, reply: replyOf(A.KnownToolList), queue: 'approval-service' },
  'approval.inbox': { request: A.InboxRequest, reply: replyOf(A.InboxDto), queue: 'approval-service' },
  'approval.action_token.mint': {
    request: A.ActionTokenMintRequest,
    reply: replyOf(A.ActionTokenMinted),
    queue: 'approval-service',
  },
  'approval.action.redeem': {
    request: A.ApprovalActionRequest,
    reply: replyOf(A.ApprovalActionResult),
    queue: 'approval-service',
  },
  'approval.decisions': {
    request: A.DecisionsRequest,
    reply: replyOf(A.DecisionsReply),
    queue: 'approval-service',
  },
  'approval.audit': { request: A.AuditRequest, reply: replyOf(A.AuditReply), queue: 'approval-service' },
  'approval.rules.list': { request: A.RulesListRequest, reply: replyOf(A.ApprovalRuleList), queue: 'approval-service' },
  'approval.rules.create': {
    request: A.RuleCreateRequest,
    reply: replyOf(A.ApprovalRuleDto),
    queue: 'approval-service',
  },
  'approval.rules.update': {
    request: A.RuleUpdateRequest,
    reply: replyOf(A.ApprovalRuleDto),
    queue: 'approval-service',
  },
  'approval.rules.delete': { request: A.RuleDeleteRequest, reply: replyOf(A.Deleted), queue: 'approval-service' },
  'approval.rules.test': { request: A.RuleTestRequest, reply: replyOf(A.RuleTestResult), queue: 'approval-service' },
  'approval.bypasses.list': { request: A.BypassListRequest, reply: replyOf(A.BypassList), queue: 'approval-service' },
  'approval.bypasses.create': { request: A.BypassCreateRequest, reply: replyOf(A.Created), queue: 'approval-service' },
  'approval.bypasses.delete': { request: A.BypassDeleteRequest, reply: replyOf(A.Deleted), queue: 'approval-service' },
  'cron.jobs.list': { request: S.CronListRequest, reply: replyOf(S.CronJobList), queue: 'scheduler' },
  'cron.jobs.create': { request: S.CronCreateRequest, reply: replyOf(S.JobCreated), queue: 'scheduler' },
  'cron.jobs.update': { request: S.CronUpdateRequest, reply: replyOf(S.CronJobDto), queue: 'scheduler' },
  'cron.jobs.delete': { request: S.CronJobRequest, reply: replyOf(S.JobDone), queue: 'scheduler' },
  'cron.jobs.toggle': { request: S.CronJobRequest, reply: replyOf(S.CronJobDto), queue: 'scheduler' },
  'cron.jobs.run': { request: S.CronJobRequest, reply: replyOf(S.RunNowReply), queue: 'scheduler' },
  'cron.jobs.kill': { request: S.CronJobRequest, reply: replyOf(S.KillReply), queue: 'scheduler' },
  'cron.runs.list': { request: S.CronRunsRequest, reply: replyOf(S.JobRunList), queue: 'scheduler' },
  'tasks.list': { request: S.TasksListRequest, reply: replyOf(S.TaskList), queue: 'scheduler' },
  'tasks.submit_async': { request: S.SubmitAsyncRequest, reply: replyOf(S.SubmitAsyncReply), queue: 'scheduler' },
  'tic.trigger': { request: S.TicTriggerRequest, reply: replyOf(S.RunNowReply), queue: 'scheduler' },
  'notifications.list': {
    request: S.NotificationsListRequest,
    reply: replyOf(S.NotificationList),
    queue: 'scheduler',
  },
  'notify.event': { request: N.NotifyEventRequest, reply: replyOf(N.NotifyEventReply), queue: 'scheduler' },
  'notify.settings.get': {
    request: N.NotificationSettingsRequest,
    reply: replyOf(N.NotificationSettings),
    queue: 'scheduler',
  },
  'notify.settings.put': {
    request: N.NotificationSettingsPutRequest,
    reply: replyOf(N.NotificationSettings),
    queue: 'scheduler',
  },
  'notify.webhooks.list': { request: N.WebhooksListRequest, reply: replyOf(N.WebhookList), queue: 'scheduler' },
  'notify.webhooks.create': { request: N.WebhookCreateRequest, reply: replyOf(N.WebhookCreated), queue: 'scheduler' },
  'notify.webhooks.delete': { request: N.WebhookRequest, reply: replyOf(N.WebhookDeleted), queue: 'scheduler' },
  'notify.webhooks.deliveries': { request: N.WebhookRequest, reply: replyOf(N.DeliveryList), queue: 'scheduler' },
  'notify.push.key': { request: N.PushKeyRequest, reply: replyOf(N.PushKeyDto), queue: 'scheduler' },
  'notify.push.list': {
    request: N.PushSubscriptionsListRequest,
    reply: replyOf(N.PushSubscriptionList),
    queue: 'scheduler',
  },
  'notify.push.subscribe': { request: N.PushSubscribeRequest, reply: replyOf(N.PushSubscribed), queue: 'scheduler' },
  'notify.push.delete': {
    request: N.PushSubscriptionRequest,
    reply: replyOf(N.PushSubscriptionDeleted),
    queue: 'scheduler',
  },
  'session.job.start': {
    request: S.JobSessionStartRequest,
    reply: replyOf(S.JobSessionStartReply),
    queue: 'session-worker',
  },
  'session.job.status': {
    request: S.JobSessionStatusRequest,
    reply: replyOf(S.JobSessionStatusReply),
    queue: 'session-worker',
  },
  'session.job.deliver': { request: S.JobDeliverRequest, reply: replyOf(S.JobDeliverReply), queue: 'session-worker' },
  'user.standing': { request: UserStandingRequest, reply: replyOf(UserStandingReply), queue: 'gateway' },
  'user.page': { request: UserPageRequest, reply: replyOf(UserPageReply), queue: 'gateway' },
  'user.presence': { request: UserPresenceRequest, reply: replyOf(UserPresenceReply), queue: 'gateway' },
} as const;
export type RequestSubject = keyof typeof SUBJECTS;
export type RequestOf<S extends RequestSubject> = z.input<(typeof SUBJECTS)[S]['request']>;
export type ParsedRequestOf<S extends RequestSubject> = z.output<(typeof SUBJECTS)[S]['request']>;
export type ReplyOf<S extends RequestSubject> = z.infer<(typeof SUBJECTS)[S]['reply']>;
export type ReplyDataOf<S extends RequestSubject> = Extract<ReplyOf<S>, { ok: true }>['data'];

/** Requests an instance of the answering service also answers alone, on `<subject>.<route>` (see `directSubject`). */
export type DirectSubject = {
  [S in RequestSubject]: (typeof SUBJECTS)[S] extends { direct: true } ? S : never;
}[RequestSubject];
export const DIRECT_SUBJECTS = (Object.keys(SUBJECTS) as RequestSubject[]).filter(
  (s) => (SUBJECTS[s] as { direct?: boolean }).direct === true,
) as DirectSubject[];

/** The NATS pattern matching every instance's own subject of a direct request (`session.submit.*`). */
export const directPattern = (subject: DirectSubject): string => `${subject}.*`;

/** A route is one NATS token: no dot, wildcard or whitespace, at most 64 characters. */
export const ROUTE_TOKEN = /^[A-Za-z0-9_-]{1,64}$/;

/** The subject one instance answers a direct request on alone (`session.submit.<route>`). */
export function directSubject(subject: DirectSubject, route: string): string {
  if (!ROUTE_TOKEN.test(route)) throw new Error(`not a route token: ${JSON.stringify(route)}`);
  return `${subject}.${route}`;
}

/**
 * An instance's route: its name made one NATS token, and a random suffix so that two processes
 * given the same name (a copied SKALD_INSTANCE) never share a subject (both would answer).
 */
export function routeOf(instance: string, random: string): string {
  return `${instance.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 48)}-${random}`;
}

/**
 * How long a worker keeps a session's history after a turn (HistoryCarry) — and so how long the
 * gateway's hint naming that worker is worth keeping (an older hint points at a dropped carry).
 */
export const CARRY_TTL_MS = 10 * 60_000;

/** Published (fire-and-forget) subjects: doorbells and client events, never the only copy of anything. */
export const TOPICS = {
  /** `session.<id>.wake`: the session has input or an answer; whoever can drive it should. */
  sessionWake: {
    pattern: 'session.*.wake',
    subject: (sessionId: string) => `session.${sessionId}.wake`,
    message: WakeSession,
  },
  /** `session.<id>.cancel`: a stop was written for this session; the lease holder aborts. */
  sessionCancel: {
    pattern: 'session.*.cancel',
    subject: (sessionId: string) => `session.${sessionId}.cancel`,
    message: WakeSession,
  },
  /** `events.<userId>.<sessionId>`: a committed session event (with seq). */
  sessionEvents: {
    pattern: 'events.*.*',
    subject: (userId: string, sessionId: string) => `events.${userId}.${sessionId}`,
    message: SessionEventSchema,
  },
  /** `ephemeral.<userId>.<sessionId>`: token deltas and tool progress, live only. */
  ephemeralEvents: {
    pattern: 'ephemeral.*.*',
    subject: (userId: string, sessionId: string) => `ephemeral.${userId}.${sessionId}`,
    message: EphemeralEventSchema,
  },
  /** `session.<id>.turn_ended`: a turn of the session ended (its rows say how); the scheduler's doorbell for job sessions. */
  sessionTurnEnded: {
    pattern: 'session.*.turn_ended',
    subject: (sessionId: string) => `session.${sessionId}.turn_ended`,
    message: WakeSession,
  },
  /** `user.<userId>.events`: inbox lifecycle, task updates, notifications. */
  userEvents: {
    pattern: 'user.*.events',
    subject: (userId: string) => `user.${userId}.events`,
    message: UserEventSchema,
  },
  /** `mcp.servers.changed.<userId>`: a user's MCP server was added or removed; every runner drops its connection. */
  mcpServersChanged: {
    pattern: 'mcp.servers.changed.*',
    subject: (userId: string) => `mcp.servers.changed.${userId}`,
    /** `reconfigured`: what runs changed or it was disabled: every replica closes its connection to it. */
    message: z.object({ user_id: Id, name: z.string(), reconfigured: z.boolean().optional() }),
  },
  /** `gateway.user.revoked`: a user's credentials changed (disabled, role, password): close their sockets. */
  userRevoked: {
    pattern: 'gateway.user.revoked',
    subject: () => 'gateway.user.revoked',
    message: z.object({ user_id: Id }),
  },
  /** `approval.resolved.<sessionId>`: a human request of the session was answered or cancelled (committed first). */
  approvalResolved: {
    pattern: 'approval.resolved.*',
    subject: (sessionId: string) => `approval.resolved.${sessionId}`,
    message: HumanRequestState,
  },
  /** `tools.cancel.<toolCallId>`: kill a running tool call. */
  toolCancel: {
    pattern: 'tools.cancel.*',
    subject: (toolCallId: string) => `tools.cancel.${toolCallId}`,
    message: ToolCancel,
  },
  /**
   * `tools.alive.<toolCallId>`: the tool runner answering a `tools.exec` is alive, sent every
   * `TOOL_ALIVE_INTERVAL_MS` from its receipt until it replies; a caller that heard one and then
   * none for `TOOL_ALIVE_LOSS_MS` ends the call as interrupted. A caller that hears none at all
   * waits for the request's deadline: a runner of a release before these signs sends none.
   */
  toolAlive: {
    pattern: 'tools.alive.*',
    subject: (toolCallId: string) => `tools.alive.${toolCallId}`,
    message: ToolCancel,
  },
  /** `approval.rules.changed`: the rule set changed; every approval-service replica drops its cache (the 1 s TTL is the backstop). */
  approvalRulesChanged: {
    pattern: 'approval.rules.changed',
    subject: () => 'approval.rules.changed',
    message: z.object({ at: Timestamp }),
  },
  /** `approval.bypass.opened`: a bypass was opened for the session: replicas drop their "no bypass here" memory of it. */
  approvalBypassOpened: {
    pattern: 'approval.bypass.opened',
    subject: () => 'approval.bypass.opened',
    message: z.object({ session_id: Id }),
  },
} as const satisfies Record<string, TopicSpec>;

/** A published subject: the pattern every instance of it matches, how one is named, what it carries. */
interface TopicSpec {
  /** Every subject of the topic (`*` is one id): what NATS permissions and whole-topic subscriptions use. */
  pattern: string;
  /** The subject of one instance, from its ids (one NATS token each, in the order of the pattern's `*`). */
  subject: (...ids: string[]) => string;
  message: z.ZodTypeAny;
}

/** The name of a published subject in `TOPICS`: what `Bus.publish` and `Bus.subscribe` take. */
export type TopicKey = keyof typeof TOPICS;
/** The ids that name one subject of a topic (none for a topic of one subject). */
export type TopicIds<K extends TopicKey> = Parameters<(typeof TOPICS)[K]['subject']>;
/** Topics of one subject, published by their key alone. */
export type FixedTopicKey = { [K in TopicKey]: TopicIds<K> extends [] ? K : never }[TopicKey];
/** What a publisher of the topic sends. */
export type TopicMessageOf<K extends TopicKey> = z.input<(typeof TOPICS)[K]['message']>;
/** What a subscriber of the topic receives (parsed). */
export type ParsedTopicMessageOf<K extends TopicKey> = z.output<(typeof TOPICS)[K]['message']>;

/** One subject of a topic (or, with `ANY_ID` among its ids, a pattern of some of them), built by `topicOf`. */
export interface TopicAddress<K extends TopicKey> {
  readonly topic: K;
  readonly subject: string;
}

/** In `topicOf` for subscribing: any id at this place (`events.<userId>.*`: every session of one user). */
export const ANY_ID = '*';

/**
 * The subject of one instance of a topic, e.g. `topicOf('sessionWake', sessionId)` is
 * `session.<sessionId>.wake`: the only way a call site names a templated subject, never by
 * concatenating strings.
 */
export function topicOf<K extends TopicKey>(topic: K, ...ids: TopicIds<K>): TopicAddress<K> {
  const build: (...a: string[]) => string = TOPICS[topic].subject;
  const subject = build(...(ids as string[]));
  return { topic, subject };
}

/** The subject a key or an address stands for: a bare key is the whole topic (its pattern). */
export function topicSubject<K extends TopicKey>(to: K | TopicAddress<K>): string {
  return typeof to === 'string' ? TOPICS[to].pattern : to.subject;
}

/** How often a tool runner says it is still running a call (`TOPICS.toolAlive`). */
export const TOOL_ALIVE_INTERVAL_MS = 1_000;
/** Silence after which a caller gives a call up as lost with its runner (several intervals: core
 *  NATS may drop a message while a client reconnects). */
export const TOOL_ALIVE_LOSS_MS = 5_000;
