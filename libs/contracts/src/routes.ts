// Size: the REST surface, one entry per operation (path, auth, summary and the schemas of its
// input and answer); the gateway's controllers bind to it, the OpenAPI document and the protocol
// reference are generated from it.
import { z } from 'zod';
import { AgentDetail, AgentId, AgentList, PutAgentRequest } from './agents';
import {
  ApprovalRuleDto,
  ApprovalRuleInput,
  ApprovalRuleList,
  ApprovalRulePatch,
  ApprovalActionRequest,
  ApprovalActionResult,
  AuditList,
  AuditQuery,
  BypassList,
  CreateBypassInput,
  Created,
  InboxDto,
  KnownToolList,
  ResolveApprovalInput,
  ResolveClarificationInput,
  ResolveToolInput,
  RuleTestInput,
  RuleTestResult,
} from './approvals';
import { Attachment, Id, Source } from './common';
import {
  DeliveryList,
  NotificationSettings,
  PushKeyDto,
  PushSubscribed,
  PushSubscriptionInput,
  PushSubscriptionList,
  WebhookCreated,
  WebhookInput,
  WebhookList,
} from './notify';
import { AdminBudgetList, AdminBudgetsQuery, BudgetLimits, BudgetStatus } from './budgets';
import { CreateGroupRequest, GroupDto, GroupList, GroupMembersRequest, PatchGroupRequest } from './groups';
import { LlmClientList, LlmClientsQuery } from './llm';
import { AdminUsageQuery, UsageExportQuery, UsageQuery, UsageReport } from './usage';
import { ChatCompletionRequest } from './openai-compat';
import { McpServerDto, McpServerInput, McpServerList, McpServerName, McpServerPatch } from './mcp';
import {
  AdminSessionDto,
  AdminUserDto,
  AdminUserList,
  BypassQuery,
  ChangePasswordRequest,
  ChatMessages,
  ChatMessagesQuery,
  CreateSessionQuery,
  CreateSessionResponse,
  CreateTokenRequest,
  CreateTokenResponse,
  CreateUserRequest,
  EditMessageRequest,
  ExportQuery,
  FilePathQuery,
  LoginRequest,
  LoginOptions,
  OidcProviderId,
  OidcRedeemRequest,
  OidcRedeemResponse,
  LoginResponse,
  PatchUserRequest,
  PostMessageRequest,
  PostMessageResponse,
  RegenerateRequest,
  RenamedSession,
  RenameSessionRequest,
  SessionActivated,
  SessionDetail,
  SessionExport,
  SessionList,
  SessionListQuery,
  SessionSearchList,
  TokenList,
  WsTicketResponse,
} from './rest';
import { RunContextDto, RunContextInput } from './run-context';
import {
  CronJobDto,
  CronJobInput,
  CronJobList,
  CronJobPatch,
  CronRunsQuery,
  JobCreated,
  JobRunList,
  KillReply,
  NotificationList,
  NotificationsQuery,
  RunNowReply,
  TaskList,
} from './scheduler';
import { HumanRequestState, SubmitMessageReply } from './subjects';
import { UserCapName } from './user-caps';

export type RouteAuth = 'public' | 'user' | 'admin';
export type RouteMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** One REST operation: its key in `ROUTES` is its operationId. */
export interface RouteDef {
  method: RouteMethod;
  /** OpenAPI form: `/api/sessions/{id}`. */
  path: string;
  /** The group it is listed under in the API document. */
  tag: string;
  summary: string;
  /** `public`: no token; `user`: any signed-in user; `admin`: admins only (403 for a user). */
  auth: RouteAuth;
  /** The path parameters, one property per `{name}` of the path. */
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** A JSON body, or `multipart`: `multipart/form-data` with one binary field `file`. */
  body?: z.ZodType | 'multipart';
  /** The success answer: a JSON schema, `binary` (a file of its own content type) or none (no body). */
  response: { status: number; schema?: z.ZodType; binary?: true };
  /** Answers 413 `too_large` past a configured size. */
  sized?: true;
  /** Answers 429 with Retry-After after too many failed password checks (account + address, address, account ceiling). */
  throttled?: true;
  /** Answers 429 with Retry-After when one client address started or holds too many single sign-ons. */
  signInLimited?: true;
  /** Answers 429 `rate_limited` at these per-user caps (`USER_CAPS`), the message naming the cap and its value. */
  capped?: readonly UserCapName[];
  /**
   * How a client reads the next page: `page` (the query's `page`, the answer's `total` and
   * `per_page`), or `before` (the query's `before` set to an item's `id`, while the answer's
   * `has_more`): the `first` item of a page is the oldest (oldest-first pages) or the `last` one.
   */
  paging?: { by: 'page' } | { by: 'before'; cursor: 'first' | 'last' };
}

const id = z.object({ id: Id });
const source = z.object({ source: Source });
const agent = z.object({ id: AgentId });
const server = z.object({ name: McpServerName });

/** Every REST operation the gateway serves, by operationId. A route a controller serves is bound to an entry here. */
export const ROUTES = {
  getOpenApiDocument: {
    method: 'get',
    path: '/api/docs',
    tag: 'docs',
    summary: 'This document: the REST contract as OpenAPI 3.1 (rendered for people at `/docs`)',
    auth: 'public',
    response: { status: 200 },
  },
  login: {
    method: 'post',
    path: '/api/auth/login',
    tag: 'auth',
    summary:
      'Log in with email and password (each attempt is counted before the check, per account + client address, per address and per account: 429 with Retry-After; 503 with Retry-After when the server is hashing too many passwords at once)',
    auth: 'public',
    throttled: true,
    body: LoginRequest,
    response: { status: 200, schema: LoginResponse },
  },
  loginOptions: {
    method: 'get',
    path: '/api/auth/options',
    tag: 'auth',
    summary:
      'How the login page lets people in: whether password login is on, and the single sign-on providers (id, label)',
    auth: 'public',
    response: { status: 200, schema: LoginOptions },
  },
  oidcStart: {
    method: 'get',
    path: '/api/auth/oidc/{provider}/start',
    tag: 'auth',
    summary:
      'Single sign-on: a redirect (302) to the provider (authorization code flow with PKCE, `state`, `nonce`), with a cookie binding the attempt to this browser (one cookie per attempt). `return_to` is where to go after: a same-origin path, anything else is `/`. One client address may start `SKALD_OIDC_MAX_FLOWS_PER_ADDRESS` a minute and have as many under way: 429 with Retry-After beyond',
    auth: 'public',
    signInLimited: true,
    params: z.object({ provider: OidcProviderId }),
    query: z.object({ return_to: z.string().max(512).optional() }),
    response: { status: 302 },
  },
  oidcCallback: {
    method: 'get',
    path: '/api/auth/oidc/{provider}/callback',
    tag: 'auth',
    summary:
      "The provider's redirect back (the redirect URI): once per attempt, from the browser that started it, within `SKALD_OIDC_FLOW_TTL_SECS`. A redirect (302) to the login page with `#oidc={handoff}` or `#oidc-error={why}`",
    auth: 'public',
    params: z.object({ provider: OidcProviderId }),
    query: z.object({
      code: z.string().max(2048).optional(),
      state: z.string().max(512).optional(),
      iss: z.string().max(2048).optional(),
      error: z.string().max(256).optional(),
      error_description: z.string().max(2048).optional(),
    }),
    response: { status: 302 },
  },
  oidcRedeem: {
    method: 'post',
    path: '/api/auth/oidc/redeem',
    tag: 'auth',
    summary:
      'The session of a finished single sign-on, for its handoff (once, within a minute; 401 otherwise), with where to go now',
    auth: 'public',
    body: OidcRedeemRequest,
    response: { status: 200, schema: OidcRedeemResponse },
  },
  oidcLogout: {
    method: 'get',
    path: '/api/auth/oidc/{provider}/logout',
    tag: 'auth',
    summary:
      "A redirect (302) to the provider's logout page (RP-initiated logout), which comes back to `/`; to `/` when it has none",
    auth: 'public',
    params: z.object({ provider: OidcProviderId }),
    response: { status: 302 },
  },
  logout: {
    method: 'post',
    path: '/api/auth/logout',
    tag: 'auth',
    summary:
      'Sign out the credential that made the request: a session token ends on every replica (it, the WebSocket tickets issued with it and their sockets: 401 and 4401 from then on); an API token is revoked',
    auth: 'user',
    response: { status: 204 },
  },
  changePassword: {
    method: 'put',
    path: '/api/auth/password',
    tag: 'auth',
    summary:
      'Change the caller’s own password, proving the current one (403 if wrong; throttled like a login). Every token, ticket and socket of the caller ends: log in again',
    auth: 'user',
    body: ChangePasswordRequest,
    throttled: true,
    response: { status: 204 },
  },
  createWsTicket: {
    method: 'post',
    path: '/api/auth/ws-ticket',
    tag: 'auth',
    summary: 'Single-use WebSocket ticket (30 s)',
    auth: 'user',
    response: { status: 200, schema: WsTicketResponse },
  },
  listTokens: {
    method: 'get',
    path: '/api/auth/tokens',
    tag: 'auth',
    summary: 'List API tokens',
    auth: 'user',
    response: { status: 200, schema: TokenList },
  },
  createToken: {
    method: 'post',
    path: '/api/auth/tokens',
    tag: 'auth',
    summary: 'Create an API token (shown once)',
    auth: 'user',
    body: CreateTokenRequest,
    response: { status: 201, schema: CreateTokenResponse },
  },
  revokeToken: {
    method: 'delete',
    path: '/api/auth/tokens/{id}',
    tag: 'auth',
    summary: 'Revoke an API token',
    auth: 'user',
    params: id,
    response: { status: 204 },
  },
  createUser: {
    method: 'post',
    path: '/api/admin/users',
    tag: 'admin',
    summary: 'Create a user',
    auth: 'admin',
    body: CreateUserRequest,
    response: { status: 201, schema: Created },
  },
  listUsers: {
    method: 'get',
    path: '/api/admin/users',
    tag: 'admin',
    summary: 'List users',
    auth: 'admin',
    response: { status: 200, schema: AdminUserList },
  },
  updateUser: {
    method: 'patch',
    path: '/api/admin/users/{id}',
    tag: 'admin',
    summary: 'Change role, password or disable (ends tokens and sockets)',
    auth: 'admin',
    params: id,
    body: PatchUserRequest,
    response: { status: 200, schema: AdminUserDto },
  },
  listGroups: {
    method: 'get',
    path: '/api/admin/groups',
    tag: 'admin',
    summary:
      'Groups with their members: the agents and LLM clients their members may use (null: all) and the approval security groups their sessions run under',
    auth: 'admin',
    response: { status: 200, schema: GroupList },
  },
  createGroup: {
    method: 'post',
    path: '/api/admin/groups',
    tag: 'admin',
    summary: 'Create a group (its name unique without regard to case: 409 if taken)',
    auth: 'admin',
    body: CreateGroupRequest,
    response: { status: 201, schema: GroupDto },
  },
  updateGroup: {
    method: 'patch',
    path: '/api/admin/groups/{id}',
    tag: 'admin',
    summary: 'Rename a group or replace its description, allowed agents, allowed LLM clients or security groups',
    auth: 'admin',
    params: id,
    body: PatchGroupRequest,
    response: { status: 200, schema: GroupDto },
  },
  deleteGroup: {
    method: 'delete',
    path: '/api/admin/groups/{id}',
    tag: 'admin',
    summary: 'Delete a group and its memberships',
    auth: 'admin',
    params: id,
    response: { status: 204 },
  },
  changeGroupMembers: {
    method: 'post',
    path: '/api/admin/groups/{id}/members',
    tag: 'admin',
    summary:
      "Add and remove a group's admin memberships (an unknown user: 404). Memberships from the identity provider's claim are replaced at each login",
    auth: 'admin',
    params: id,
    body: GroupMembersRequest,
    response: { status: 200, schema: GroupDto },
  },
  adminBudgets: {
    method: 'get',
    path: '/api/admin/budgets',
    tag: 'admin',
    summary:
      'Users at `min_percent` (default 80) or more of any LLM limit in force (tokens or cost, per UTC day or month), closest first, at most 500: each limit with who set it, what was used and when it resets',
    auth: 'admin',
    query: AdminBudgetsQuery,
    response: { status: 200, schema: AdminBudgetList },
  },
  getUserBudget: {
    method: 'get',
    path: '/api/admin/users/{id}/budget',
    tag: 'admin',
    summary:
      "A user's LLM budget: the limits an admin set for them (null: their groups decide) and the limits in force with their use",
    auth: 'admin',
    params: id,
    response: { status: 200, schema: BudgetStatus },
  },
  putUserBudget: {
    method: 'put',
    path: '/api/admin/users/{id}/budget',
    tag: 'admin',
    summary:
      "Set a user's own LLM limits, replacing their groups' limits (a field left out or null: no limit on it); applies from their next model call",
    auth: 'admin',
    params: id,
    body: BudgetLimits,
    response: { status: 200, schema: BudgetStatus },
  },
  deleteUserBudget: {
    method: 'delete',
    path: '/api/admin/users/{id}/budget',
    tag: 'admin',
    summary: "Clear a user's own LLM limits: their groups' limits (or the deployment's default) apply again",
    auth: 'admin',
    params: id,
    response: { status: 204 },
  },
  adminGetSession: {
    method: 'get',
    path: '/api/admin/sessions/{id}',
    tag: 'admin',
    summary:
      "Any user's conversation, read only: its summary and its owner. Each read of another user's conversation is recorded (admin, session, time); `SKALD_ADMIN_CHAT_ACCESS=off` refuses it (403)",
    auth: 'admin',
    params: id,
    response: { status: 200, schema: AdminSessionDto },
  },
  adminSessionMessages: {
    method: 'get',
    path: '/api/admin/sessions/{id}/messages',
    tag: 'admin',
    summary:
      "Any user's chat history, read only, as `GET /{source}/messages` pages it (oldest first, synthetic and superseded rows excluded). Recorded and refused like `GET /admin/sessions/{id}`",
    auth: 'admin',
    params: id,
    query: ChatMessagesQuery,
    paging: { by: 'before', cursor: 'first' },
    response: { status: 200, schema: ChatMessages },
  },
  listSessions: {
    method: 'get',
    path: '/api/sessions',
    tag: 'sessions',
    summary:
      "List the caller's conversations, newest first, with their titles; with `q`: full-text search over the caller's own messages (plain words, quotes, `-word`, `or`), one hit per conversation with a snippet, best match first",
    auth: 'user',
    query: SessionListQuery,
    paging: { by: 'page' },
    response: { status: 200, schema: z.union([SessionList, SessionSearchList]) },
  },
  getSession: {
    method: 'get',
    path: '/api/sessions/{id}',
    tag: 'sessions',
    summary:
      'Session debug tree (superseded rows marked `superseded`; messages a `/stop` discarded are user rows with status `discarded`, where they were sent)',
    auth: 'user',
    params: id,
    response: { status: 200, schema: SessionDetail },
  },
  renameSession: {
    method: 'patch',
    path: '/api/sessions/{id}',
    tag: 'sessions',
    summary: 'Rename a conversation (a generated title never overwrites it)',
    auth: 'user',
    params: id,
    body: RenameSessionRequest,
    response: { status: 200, schema: RenamedSession },
  },
  deleteSession: {
    method: 'delete',
    path: '/api/sessions/{id}',
    tag: 'sessions',
    summary:
      'Delete a conversation and everything it owns (messages, tool calls, events, inbox), its running turn stopped first; the active one is replaced by a new session',
    auth: 'user',
    params: id,
    response: { status: 204 },
  },
  exportSession: {
    method: 'get',
    path: '/api/sessions/{id}/export',
    tag: 'sessions',
    summary:
      'The conversation as a download (`Content-Disposition: attachment`): Markdown (text/markdown) or JSON, what the chat shows, oldest first',
    auth: 'user',
    params: id,
    query: ExportQuery,
    response: { status: 200, schema: SessionExport },
  },
  activateSession: {
    method: 'post',
    path: '/api/sessions/{id}/activate',
    tag: 'sessions',
    summary:
      "Reopen a conversation as the active session of its source (the source's sockets get `new_session`; its remembered model is chosen again)",
    auth: 'user',
    params: id,
    response: { status: 200, schema: SessionActivated },
  },
  createSession: {
    method: 'post',
    path: '/api/sessions',
    tag: 'sessions',
    summary:
      "Start a new active session for a source, answered by `agent_id` (the default agent when left out); an agent the caller's groups do not allow is 403 naming `agent_id`",
    auth: 'user',
    query: CreateSessionQuery,
    capped: ['sessions'],
    response: { status: 201, schema: CreateSessionResponse },
  },
  postMessage: {
    method: 'post',
    path: '/api/{source}/messages',
    tag: 'chat',
    summary: 'Send a message (202; a repeated client_message_id answers 200 with the same ids)',
    auth: 'user',
    params: source,
    body: PostMessageRequest,
    capped: ['sessions', 'queued_messages'],
    response: { status: 202, schema: PostMessageResponse },
  },
  regenerate: {
    method: 'post',
    path: '/api/{source}/regenerate',
    tag: 'chat',
    summary:
      'Answer the last user message of the active session again: its old answer is superseded (kept in the debug tree, never sent to the model); 409 while a turn runs',
    auth: 'user',
    params: source,
    body: RegenerateRequest,
    capped: ['queued_messages'],
    response: { status: 202, schema: SubmitMessageReply },
  },
  editMessage: {
    method: 'post',
    path: '/api/{source}/messages/{id}/edit',
    tag: 'chat',
    summary:
      'Edit-and-resend: the user message and everything after it are superseded, the new text enters and is answered; 404 for a message not in the active conversation, 409 while a turn runs',
    auth: 'user',
    params: z.object({ source: Source, id: Id.describe('user message id') }),
    body: EditMessageRequest,
    capped: ['queued_messages'],
    response: { status: 202, schema: SubmitMessageReply },
  },
  listMessages: {
    method: 'get',
    path: '/api/{source}/messages',
    tag: 'chat',
    summary: "Chat history of the source's active session for the UI (oldest first, synthetic rows excluded)",
    auth: 'user',
    params: source,
    query: ChatMessagesQuery,
    paging: { by: 'before', cursor: 'first' },
    response: { status: 200, schema: ChatMessages },
  },
  getRunContext: {
    method: 'get',
    path: '/api/sessions/{id}/run-context',
    tag: 'sessions',
    summary:
      "The session's RunContext: working directory, pre-authorised read and write paths, system prompt additions, pre-granted MCP servers, security group",
    auth: 'user',
    params: id,
    response: { status: 200, schema: RunContextDto },
  },
  putRunContext: {
    method: 'put',
    path: '/api/sessions/{id}/run-context',
    tag: 'sessions',
    summary:
      "Replace the session's RunContext (a field left out is cleared; every path inside the workspace, else 400; enabled_mcp_servers: the caller's own servers, else 400 naming the entry; security_group: admins only, else 403)",
    auth: 'user',
    params: id,
    body: RunContextInput,
    response: { status: 200, schema: RunContextDto },
  },
  uploadFile: {
    method: 'post',
    path: '/api/{source}/uploads',
    tag: 'files',
    summary:
      "Upload an attachment into the caller's workspace (`uploads/<sanitised name>`; a taken name gets ` (n)`), within the upload limit (SKALD_UPLOAD_MAX_BYTES) and the workspace quota (413 past either)",
    auth: 'user',
    params: source,
    body: 'multipart',
    sized: true,
    capped: ['uploads', 'staged_bytes'],
    response: { status: 201, schema: Attachment },
  },
  getFile: {
    method: 'get',
    path: '/api/files',
    tag: 'files',
    summary:
      "A file of the caller's workspace, with its content type and Content-Disposition; never executable in the page (nosniff, sandboxing CSP, HTML/SVG as attachment). 404 outside the workspace",
    auth: 'user',
    query: FilePathQuery,
    sized: true,
    response: { status: 200, binary: true },
  },
  cancelTurn: {
    method: 'post',
    path: '/api/{source}/cancel',
    tag: 'chat',
    summary: "/stop the running turn of the source's session",
    auth: 'user',
    params: source,
    response: { status: 202 },
  },
  resolveToolCall: {
    method: 'post',
    path: '/api/tools/{id}/resolve',
    tag: 'inbox',
    summary: "Approve or reject a tool call by its id (owner: the call's session's user); 409 if answered",
    auth: 'user',
    params: z.object({ id: Id.describe('tool call id') }),
    body: ResolveToolInput,
    response: { status: 200, schema: HumanRequestState },
  },
  getInbox: {
    method: 'get',
    path: '/api/inbox',
    tag: 'inbox',
    summary: "Pending approvals and questions across the caller's sessions",
    auth: 'user',
    response: { status: 200, schema: InboxDto },
  },
  resolveApproval: {
    method: 'post',
    path: '/api/inbox/approvals/{id}/resolve',
    tag: 'inbox',
    summary:
      'Approve or reject by request id; 409 if already answered. `bypass_secs` / `bypass_scope` open a session bypass: `call` (the default) is the narrow scope the inbox item lists under `session_approval`, wide scopes (`all`, a category) are explicit. `arguments` approves the call edited: checked by the tool schema (400) and the gate (a Deny is 403, the call still waits); no session bypass with it',
    auth: 'user',
    params: z.object({ id: Id.describe('request id') }),
    body: ResolveApprovalInput,
    response: { status: 200, schema: HumanRequestState },
  },
  approvalAction: {
    method: 'post',
    path: '/api/approvals/actions',
    tag: 'inbox',
    summary:
      'Approve or reject from a push notification with its action token (no cookie or bearer: the token is the credential). A token acts once, for 15 minutes at most, for the one call it was minted for, as the user it was minted for; an unknown, used, expired or no longer matching token is 403 with one message. Failed attempts are throttled per client address like logins (429 with Retry-After); 409 if the request was already answered',
    auth: 'public',
    throttled: true,
    body: ApprovalActionRequest,
    response: { status: 200, schema: ApprovalActionResult },
  },
  answerClarification: {
    method: 'post',
    path: '/api/inbox/clarifications/{id}/resolve',
    tag: 'inbox',
    summary: 'Answer a question by request id; 409 if already answered',
    auth: 'user',
    params: z.object({ id: Id.describe('request id') }),
    body: ResolveClarificationInput,
    response: { status: 200, schema: HumanRequestState },
  },
  listApprovalRules: {
    method: 'get',
    path: '/api/approval/rules',
    tag: 'approval',
    summary:
      'Approval rules in evaluation order: the built-in rules (`built_in: true`, code, read-only) first, then the stored ones',
    auth: 'admin',
    response: { status: 200, schema: ApprovalRuleList },
  },
  createApprovalRule: {
    method: 'post',
    path: '/api/approval/rules',
    tag: 'approval',
    summary: 'Create an approval rule',
    auth: 'admin',
    body: ApprovalRuleInput,
    response: { status: 201, schema: ApprovalRuleDto },
  },
  updateApprovalRule: {
    method: 'patch',
    path: '/api/approval/rules/{id}',
    tag: 'approval',
    summary: 'Change an approval rule (every replica at once, within 5 s at worst); 409 for a built-in rule',
    auth: 'admin',
    params: id,
    body: ApprovalRulePatch,
    response: { status: 200, schema: ApprovalRuleDto },
  },
  deleteApprovalRule: {
    method: 'delete',
    path: '/api/approval/rules/{id}',
    tag: 'approval',
    summary: 'Delete an approval rule; 409 for a built-in rule',
    auth: 'admin',
    params: id,
    response: { status: 204 },
  },
  testApprovalRules: {
    method: 'post',
    path: '/api/approval/rules/test',
    tag: 'approval',
    summary:
      "What the gate would decide, evaluating the security groups of the user's groups, then the default rules: with session_id, for a call of that session (its agent, source, group, RunContext, auto-deny, bypasses and its owner's groups; a differing agent_id/source/security_group is 400); without, for the fields sent, as `as_user_id` (that user's groups and role) or a member of `as_group_id` (admins only; 404 for an unknown user or group)",
    auth: 'user',
    body: RuleTestInput,
    response: { status: 200, schema: RuleTestResult },
  },
  listApprovalTools: {
    method: 'get',
    path: '/api/approval/tools',
    tag: 'approval',
    summary:
      'The gate-able tools offered to the caller: registry, synthetic and their discovered ones (category "dynamic"; an admin: every user\'s)',
    auth: 'user',
    response: { status: 200, schema: KnownToolList },
  },
  listAudit: {
    method: 'get',
    path: '/api/approval/audit',
    tag: 'approval',
    summary:
      "Decisions, automatic and human, newest first (own sessions; admins all), filtered by session, user, tool, decision and time; another user's for admins only (403)",
    auth: 'user',
    query: AuditQuery,
    paging: { by: 'before', cursor: 'last' },
    response: { status: 200, schema: AuditList },
  },
  listBypasses: {
    method: 'get',
    path: '/api/approval/bypasses',
    tag: 'approval',
    summary: 'Active session bypasses',
    auth: 'user',
    query: BypassQuery,
    response: { status: 200, schema: BypassList },
  },
  openBypass: {
    method: 'post',
    path: '/api/approval/bypasses',
    tag: 'approval',
    summary:
      "Open a session bypass on one of the caller's sessions (a human only): wide (`all`, a category, an MCP server) or narrow (one tool's program and subcommand, or directory). Deny and command lines the gate cannot read are never bypassed",
    auth: 'user',
    body: CreateBypassInput,
    response: { status: 201, schema: Created },
  },
  revokeBypass: {
    method: 'delete',
    path: '/api/approval/bypasses/{id}',
    tag: 'approval',
    summary: 'Revoke a session bypass',
    auth: 'user',
    params: id,
    response: { status: 204 },
  },
  listMcpServers: {
    method: 'get',
    path: '/api/mcp/servers',
    tag: 'mcp',
    summary: "The caller's MCP servers with their status (credentials listed by key only)",
    auth: 'user',
    response: { status: 200, schema: McpServerList },
  },
  createMcpServer: {
    method: 'post',
    path: '/api/mcp/servers',
    tag: 'mcp',
    summary:
      'Add an MCP server (stdio, run in a sandbox of its own; or streamable HTTP, refused on loopback, private or link-local addresses unless allow-listed)',
    auth: 'user',
    body: McpServerInput,
    response: { status: 201, schema: McpServerDto },
  },
  updateMcpServer: {
    method: 'patch',
    path: '/api/mcp/servers/{name}',
    tag: 'mcp',
    summary:
      'Change an MCP server in place: enabled (false stops it on every tool runner and takes its tools away), or what runs (command, args, env, network; url, headers), which stops the running process; a field of the other transport is 400',
    auth: 'user',
    params: server,
    body: McpServerPatch,
    response: { status: 200, schema: McpServerDto },
  },
  deleteMcpServer: {
    method: 'delete',
    path: '/api/mcp/servers/{name}',
    tag: 'mcp',
    summary: 'Remove an MCP server (its connections close on every tool runner)',
    auth: 'user',
    params: server,
    response: { status: 204 },
  },
  listCronJobs: {
    method: 'get',
    path: '/api/cron/jobs',
    tag: 'cron',
    summary: "The caller's cron jobs with their next fire and the session of a running run",
    auth: 'user',
    response: { status: 200, schema: CronJobList },
  },
  createCronJob: {
    method: 'post',
    path: '/api/cron/jobs',
    tag: 'cron',
    summary:
      "Schedule an agent (cron: five fields, or six with seconds first; timezone an IANA name; a minimum interval applies; run_context.enabled_mcp_servers: the caller's own servers, else 400; run_context.security_group: admins only, else 403)",
    auth: 'user',
    body: CronJobInput,
    capped: ['cron_jobs'],
    response: { status: 201, schema: JobCreated },
  },
  updateCronJob: {
    method: 'patch',
    path: '/api/cron/jobs/{id}',
    tag: 'cron',
    summary:
      "Change a cron job (run_context.enabled_mcp_servers: the caller's own servers, else 400; run_context.security_group: admins only, else 403)",
    auth: 'user',
    params: id,
    body: CronJobPatch,
    response: { status: 200, schema: CronJobDto },
  },
  deleteCronJob: {
    method: 'delete',
    path: '/api/cron/jobs/{id}',
    tag: 'cron',
    summary: 'Delete a cron job (a running run is cancelled)',
    auth: 'user',
    params: id,
    response: { status: 204 },
  },
  toggleCronJob: {
    method: 'post',
    path: '/api/cron/jobs/{id}/toggle',
    tag: 'cron',
    summary: 'Enable or disable a cron job',
    auth: 'user',
    params: id,
    response: { status: 200, schema: CronJobDto },
  },
  runCronJob: {
    method: 'post',
    path: '/api/cron/jobs/{id}/run',
    tag: 'cron',
    summary: 'Run a cron job now (also when disabled); 409 while a run is open',
    auth: 'user',
    params: id,
    response: { status: 202, schema: RunNowReply },
  },
  killCronRun: {
    method: 'post',
    path: '/api/cron/jobs/{id}/kill',
    tag: 'cron',
    summary: "Kill a job's running run: its session is cancelled through the same path as /stop",
    auth: 'user',
    params: id,
    response: { status: 202, schema: KillReply },
  },
  listCronRuns: {
    method: 'get',
    path: '/api/cron/runs',
    tag: 'cron',
    summary: "Runs of the caller's cron jobs, newest first",
    auth: 'user',
    query: CronRunsQuery,
    response: { status: 200, schema: JobRunList },
  },
  listNotifications: {
    method: 'get',
    path: '/api/notifications',
    tag: 'notifications',
    summary: "The caller's notifications (cron run endings), newest first",
    auth: 'user',
    query: NotificationsQuery,
    paging: { by: 'before', cursor: 'last' },
    response: { status: 200, schema: NotificationList },
  },
  getNotificationSettings: {
    method: 'get',
    path: '/api/notifications/settings',
    tag: 'notifications',
    summary: "The caller's notification settings: which kinds go to which channel, and quiet hours",
    auth: 'user',
    response: { status: 200, schema: NotificationSettings },
  },
  putNotificationSettings: {
    method: 'put',
    path: '/api/notifications/settings',
    tag: 'notifications',
    summary: "Replace the caller's notification settings",
    auth: 'user',
    body: NotificationSettings,
    response: { status: 200, schema: NotificationSettings },
  },
  listWebhooks: {
    method: 'get',
    path: '/api/notifications/webhooks',
    tag: 'notifications',
    summary: "The caller's webhooks (never their secrets)",
    auth: 'user',
    response: { status: 200, schema: WebhookList },
  },
  createWebhook: {
    method: 'post',
    path: '/api/notifications/webhooks',
    tag: 'notifications',
    summary:
      "Add a webhook; the answer shows its signing secret, once. A URL whose host is or resolves to a loopback, private or link-local address is refused (400). scope `admin` (admins only, else 403): every user's events, or only `kinds`",
    auth: 'user',
    body: WebhookInput,
    response: { status: 201, schema: WebhookCreated },
  },
  deleteWebhook: {
    method: 'delete',
    path: '/api/notifications/webhooks/{id}',
    tag: 'notifications',
    summary: "Remove one of the caller's webhooks, with its delivery log",
    auth: 'user',
    params: id,
    response: { status: 204 },
  },
  listWebhookDeliveries: {
    method: 'get',
    path: '/api/notifications/webhooks/{id}/deliveries',
    tag: 'notifications',
    summary: "The latest deliveries of one of the caller's webhooks: status, attempts, last error, response code",
    auth: 'user',
    params: id,
    response: { status: 200, schema: DeliveryList },
  },
  getPushKey: {
    method: 'get',
    path: '/api/notifications/push/key',
    tag: 'notifications',
    summary:
      "The deployment's VAPID public key, the `applicationServerKey` of `PushManager.subscribe` (base64url); null when push is off",
    auth: 'user',
    response: { status: 200, schema: PushKeyDto },
  },
  listPushSubscriptions: {
    method: 'get',
    path: '/api/notifications/push/subscriptions',
    tag: 'notifications',
    summary: "The caller's push subscriptions, one per browser or device (never their keys)",
    auth: 'user',
    response: { status: 200, schema: PushSubscriptionList },
  },
  subscribePush: {
    method: 'post',
    path: '/api/notifications/push/subscriptions',
    tag: 'notifications',
    summary:
      "Add this browser's push subscription (`PushSubscription.toJSON()` and a device label); idempotent on the endpoint (`created` false when the caller had it). An endpoint that is not https, or is or resolves to a loopback, private or link-local address, is refused (400) unless the operator allow-lists it; 503 when push is off",
    auth: 'user',
    body: PushSubscriptionInput,
    response: { status: 201, schema: PushSubscribed },
  },
  deletePushSubscription: {
    method: 'delete',
    path: '/api/notifications/push/subscriptions/{id}',
    tag: 'notifications',
    summary: "Remove one of the caller's push subscriptions (404 for another user's)",
    auth: 'user',
    params: id,
    response: { status: 204 },
  },
  triggerTic: {
    method: 'post',
    path: '/api/tic/trigger',
    tag: 'cron',
    summary: "Run the caller's periodic system tick now (the `tic` agent in an ephemeral session); 409 while one runs",
    auth: 'user',
    response: { status: 202, schema: RunNowReply },
  },
  listTasks: {
    method: 'get',
    path: '/api/{source}/tasks',
    tag: 'chat',
    summary: 'Running async tasks of the active session of a source, and failures of the last 30 minutes',
    auth: 'user',
    params: source,
    response: { status: 200, schema: TaskList },
  },
  listLlmClients: {
    method: 'get',
    path: '/api/llm/clients',
    tag: 'llm',
    summary:
      "The configured LLM clients the caller's groups allow (each with its configured number), with their health across every worker replica, and the caller's pin for `source`",
    auth: 'user',
    query: LlmClientsQuery,
    response: { status: 200, schema: LlmClientList },
  },
  myUsage: {
    method: 'get',
    path: '/api/llm/usage',
    tag: 'llm',
    summary:
      "The caller's own LLM usage over `[from, until)` (UTC days, at most 366): totals, per day, per client and model, failed calls",
    auth: 'user',
    query: UsageQuery,
    response: { status: 200, schema: UsageReport },
  },
  myBudget: {
    method: 'get',
    path: '/api/llm/budget',
    tag: 'llm',
    summary:
      "The caller's LLM limits in force (tokens and cost per UTC day and month), who set each, what was used and when it resets",
    auth: 'user',
    response: { status: 200, schema: BudgetStatus },
  },
  adminUsage: {
    method: 'get',
    path: '/api/admin/usage',
    tag: 'admin',
    summary:
      "Every user's LLM usage over `[from, until)` (UTC days, at most 366): totals, per day, per client and model, failed calls, the `top` users by tokens, and per group (current members; a user in several groups counts in each; the users in no group on one row)",
    auth: 'admin',
    query: AdminUsageQuery,
    response: { status: 200, schema: UsageReport },
  },
  adminUserUsage: {
    method: 'get',
    path: '/api/admin/usage/users/{id}',
    tag: 'admin',
    summary: "One user's LLM usage over `[from, until)`, as `GET /llm/usage` gives it to that user",
    auth: 'admin',
    params: id,
    query: UsageQuery,
    response: { status: 200, schema: UsageReport },
  },
  adminUsageExport: {
    method: 'get',
    path: '/api/admin/usage/export',
    tag: 'admin',
    summary:
      'One table of the usage report over `[from, until)` as CSV (`text/csv`, an attachment): `by` day, model, user (the 5,000 users with the most tokens), group or failure. A cell starting with = + - @ is prefixed with a quote so a spreadsheet does not run it',
    auth: 'admin',
    query: UsageExportQuery,
    response: { status: 200, binary: true },
  },
  listAgents: {
    method: 'get',
    path: '/api/agents',
    tag: 'agents',
    summary:
      'Task agents the caller’s groups allow (what list_agents returns), with the caller’s overrides and own agents',
    auth: 'user',
    response: { status: 200, schema: AgentList },
  },
  getAgent: {
    method: 'get',
    path: '/api/agents/{id}',
    tag: 'agents',
    summary: 'One agent as the caller sees it (AGENT.md text and meta, with the caller’s override)',
    auth: 'user',
    params: agent,
    response: { status: 200, schema: AgentDetail },
  },
  putAgent: {
    method: 'put',
    path: '/api/agents/{id}',
    tag: 'agents',
    summary:
      'Override a built-in agent’s prompt and / or meta fields for the caller, change the caller’s own agent, or create one (prompt + meta with name and type)',
    auth: 'user',
    params: agent,
    body: PutAgentRequest,
    response: { status: 200, schema: AgentDetail },
  },
  deleteAgentOverride: {
    method: 'delete',
    path: '/api/agents/{id}/override',
    tag: 'agents',
    summary: 'Remove the caller’s override (the built-in agent is back to its files) or the caller’s own agent',
    auth: 'user',
    params: agent,
    response: { status: 204 },
  },
  listModels: {
    method: 'get',
    path: '/v1/models',
    tag: 'openai',
    summary:
      'OpenAI-compatible: the agents the caller may use, as models `skald/<agent id>` (errors in OpenAI’s shape)',
    auth: 'user',
    response: { status: 200 },
  },
  createChatCompletion: {
    method: 'post',
    path: '/v1/chat/completions',
    tag: 'openai',
    summary:
      'OpenAI-compatible Chat Completions (streamed with `stream: true`): the agent answers the last user message in the conversation the x-skald-conversation header (or metadata.skald_conversation) names, else the one this API token opened whose messages the request extends exactly, else a new one (docs/openai-compatible.md); errors in OpenAI’s shape',
    auth: 'user',
    body: ChatCompletionRequest,
    response: { status: 200 },
    capped: ['sessions', 'queued_messages'],
  },
} as const satisfies Record<string, RouteDef>;

export type Routes = typeof ROUTES;
export type OperationId = keyof Routes;
export const OPERATION_IDS = Object.keys(ROUTES) as OperationId[];

type SchemaIn<S> = S extends z.ZodType ? z.input<S> : never;
type SchemaOut<S> = S extends z.ZodType ? z.output<S> : never;
/** The path parameters an operation takes (`never` when it has none). */
export type RouteParams<K extends OperationId> = Routes[K] extends { params: infer P } ? SchemaIn<P> : never;
/** Its query (what a client sends: defaults may be left out). */
export type RouteQuery<K extends OperationId> = Routes[K] extends { query: infer Q } ? SchemaIn<Q> : never;
/** Its body: the JSON a client sends, `FormData` for a multipart upload, `never` when it takes none. */
export type RouteBody<K extends OperationId> = Routes[K] extends { body: infer B }
  ? B extends 'multipart'
    ? FormData
    : SchemaIn<B>
  : never;
/** Its success answer: the JSON, a `Blob` for a file, `void` for no body. */
export type RouteResponse<K extends OperationId> = Routes[K]['response'] extends { schema: infer S }
  ? SchemaOut<S>
  : Routes[K]['response'] extends { binary: true }
    ? Blob
    : void;

/** The Express form of a route's path: `/api/sessions/:id`. */
export function expressPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}
