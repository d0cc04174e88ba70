// Size: the REST surface's route table for the OpenAPI document, one entry per route with its
// contract schemas; a document generated from the routes themselves is to replace it.
import { z } from 'zod';
import {
  Attachment,
  RunContextDto,
  RunContextInput,
  ChangePasswordRequest,
  ChatMessages,
  CreateSessionResponse,
  CreateTokenRequest,
  CreateTokenResponse,
  CreateUserRequest,
  ErrorResponse,
  LoginRequest,
  LoginResponse,
  PostMessageRequest,
  PostMessageResponse,
  EditMessageRequest,
  RegenerateRequest,
  RenameSessionRequest,
  SessionDetail,
  SessionExport,
  SessionList,
  SessionSearchList,
  SubmitMessageReply,
  TokenDto,
  WsTicketResponse,
  McpServerDto,
  McpServerInput,
  McpServerPatch,
  McpServerList,
  USER_CAPS,
  UserCapName,
} from '@skald/contracts';
import { AgentDetail, AgentList, PutAgentRequest } from '@skald/contracts';
import {
  ApprovalRuleDto,
  ApprovalRuleInput,
  ApprovalRuleList,
  ApprovalRulePatch,
  AuditList,
  BypassList,
  CreateBypassInput,
  HumanRequestState,
  InboxDto,
  KnownToolList,
  ResolveApprovalInput,
  ResolveClarificationInput,
  ResolveToolInput,
  RuleTestInput,
  RuleTestResult,
} from '@skald/contracts';
import { LlmClientList } from '@skald/contracts';
import {
  CronJobDto,
  CronJobInput,
  CronJobList,
  CronJobPatch,
  JobCreated,
  JobRunList,
  KillReply,
  NotificationList,
  RunNowReply,
  TaskList,
  ChatCompletionRequest,
} from '@skald/contracts';

interface Route {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  summary: string;
  auth?: 'public' | 'user' | 'admin';
  params?: Array<{ name: string; in: 'path' | 'query'; required?: boolean; description?: string }>;
  body?: z.ZodType;
  /** The body is `multipart/form-data` with one binary field `file` (not JSON). */
  multipart?: boolean;
  /** Answers 413 `too_large` past a configured size. */
  sized?: boolean;
  /** Answers 429 with Retry-After after too many failed password checks (account + address, address, account ceiling). */
  throttled?: boolean;
  /** Answers 429 `rate_limited` at these per-user caps (`USER_CAPS`), the message naming the cap and its value. */
  capped?: UserCapName[];
  /** `binary`: the body is a file of its own content type, not JSON. */
  ok: { status: number; schema?: z.ZodType; binary?: boolean };
}

/** Every REST route the gateway serves. A route added to a controller is added here. */
export const ROUTES: Route[] = [
  {
    method: 'get',
    path: '/api/docs',
    summary: 'This document: the REST contract as OpenAPI 3.1',
    auth: 'public',
    ok: { status: 200 },
  },
  {
    method: 'post',
    path: '/api/auth/login',
    summary:
      'Log in with email and password (each attempt is counted before the check, per account + client address, per address and per account: 429 with Retry-After; 503 with Retry-After when the server is hashing too many passwords at once)',
    auth: 'public',
    throttled: true,
    body: LoginRequest,
    ok: { status: 200, schema: LoginResponse },
  },
  {
    method: 'put',
    path: '/api/auth/password',
    summary:
      'Change the caller’s own password, proving the current one (403 if wrong; throttled like a login). Every token, ticket and socket of the caller ends: log in again',
    body: ChangePasswordRequest,
    throttled: true,
    ok: { status: 204 },
  },
  {
    method: 'post',
    path: '/api/auth/ws-ticket',
    summary: 'Single-use WebSocket ticket (30 s)',
    ok: { status: 200, schema: WsTicketResponse },
  },
  {
    method: 'get',
    path: '/api/auth/tokens',
    summary: 'List API tokens',
    ok: { status: 200, schema: z.object({ items: z.array(TokenDto) }) },
  },
  {
    method: 'post',
    path: '/api/auth/tokens',
    summary: 'Create an API token (shown once)',
    body: CreateTokenRequest,
    ok: { status: 201, schema: CreateTokenResponse },
  },
  {
    method: 'delete',
    path: '/api/auth/tokens/{id}',
    summary: 'Revoke an API token',
    params: [{ name: 'id', in: 'path', required: true }],
    ok: { status: 204 },
  },
  {
    method: 'post',
    path: '/api/admin/users',
    summary: 'Create a user',
    auth: 'admin',
    body: CreateUserRequest,
    ok: { status: 201, schema: z.object({ id: z.string() }) },
  },
  { method: 'get', path: '/api/admin/users', summary: 'List users', auth: 'admin', ok: { status: 200 } },
  {
    method: 'patch',
    path: '/api/admin/users/{id}',
    summary: 'Change role, password or disable (ends tokens and sockets)',
    auth: 'admin',
    params: [{ name: 'id', in: 'path', required: true }],
    ok: { status: 200 },
  },
  {
    method: 'get',
    path: '/api/sessions',
    summary:
      "List the caller's conversations, newest first, with their titles; with `q`: full-text search over the caller's own messages (plain words, quotes, `-word`, `or`), one hit per conversation with a snippet, best match first",
    ok: { status: 200, schema: z.union([SessionList, SessionSearchList]) },
    params: [
      { name: 'q', in: 'query', description: 'search words (1-200 characters)' },
      { name: 'source', in: 'query' },
      { name: 'page', in: 'query' },
      { name: 'per_page', in: 'query' },
    ],
  },
  {
    method: 'get',
    path: '/api/sessions/{id}',
    summary:
      'Session debug tree (superseded rows marked `superseded`; messages a `/stop` discarded are user rows with status `discarded`, where they were sent)',
    params: [{ name: 'id', in: 'path', required: true }],
    ok: { status: 200, schema: SessionDetail },
  },
  {
    method: 'patch',
    path: '/api/sessions/{id}',
    summary: 'Rename a conversation (a generated title never overwrites it)',
    params: [{ name: 'id', in: 'path', required: true }],
    body: RenameSessionRequest,
    ok: { status: 200, schema: z.object({ id: z.string(), title: z.string() }) },
  },
  {
    method: 'delete',
    path: '/api/sessions/{id}',
    summary:
      'Delete a conversation and everything it owns (messages, tool calls, events, inbox), its running turn stopped first; the active one is replaced by a new session',
    params: [{ name: 'id', in: 'path', required: true }],
    ok: { status: 204 },
  },
  {
    method: 'get',
    path: '/api/sessions/{id}/export',
    summary:
      'The conversation as a download (`Content-Disposition: attachment`): Markdown (text/markdown) or JSON, what the chat shows, oldest first',
    params: [
      { name: 'id', in: 'path', required: true },
      { name: 'format', in: 'query', description: 'markdown (default) or json' },
    ],
    ok: { status: 200, schema: SessionExport },
  },
  {
    method: 'post',
    path: '/api/sessions/{id}/activate',
    summary:
      "Reopen a conversation as the active session of its source (the source's sockets get `new_session`; its remembered model is chosen again)",
    params: [{ name: 'id', in: 'path', required: true }],
    ok: { status: 200, schema: z.object({ session_id: z.string(), source: z.string() }) },
  },
  {
    method: 'post',
    path: '/api/sessions',
    summary: 'Start a new active session for a source',
    params: [{ name: 'source', in: 'query' }],
    capped: ['sessions'],
    ok: { status: 201, schema: CreateSessionResponse },
  },
  {
    method: 'post',
    path: '/api/{source}/messages',
    summary: 'Send a message (202; a repeated client_message_id answers 200 with the same ids)',
    params: [{ name: 'source', in: 'path', required: true }],
    body: PostMessageRequest,
    capped: ['sessions', 'queued_messages'],
    ok: { status: 202, schema: PostMessageResponse },
  },
  {
    method: 'post',
    path: '/api/{source}/regenerate',
    summary:
      'Answer the last user message of the active session again: its old answer is superseded (kept in the debug tree, never sent to the model); 409 while a turn runs',
    params: [{ name: 'source', in: 'path', required: true }],
    body: RegenerateRequest,
    capped: ['queued_messages'],
    ok: { status: 202, schema: SubmitMessageReply },
  },
  {
    method: 'post',
    path: '/api/{source}/messages/{id}/edit',
    summary:
      'Edit-and-resend: the user message and everything after it are superseded, the new text enters and is answered; 404 for a message not in the active conversation, 409 while a turn runs',
    params: [
      { name: 'source', in: 'path', required: true },
      { name: 'id', in: 'path', required: true, description: 'user message id' },
    ],
    body: EditMessageRequest,
    capped: ['queued_messages'],
    ok: { status: 202, schema: SubmitMessageReply },
  },
  {
    method: 'get',
    path: '/api/{source}/messages',
    summary: "Chat history of the source's active session for the UI (oldest first, synthetic rows excluded)",
    params: [
      { name: 'source', in: 'path', required: true },
      { name: 'before', in: 'query' },
      { name: 'limit', in: 'query' },
    ],
    ok: { status: 200, schema: ChatMessages },
  },
  {
    method: 'get',
    path: '/api/sessions/{id}/run-context',
    summary:
      "The session's RunContext: working directory, pre-authorised read and write paths, system prompt additions, pre-granted MCP servers, security group",
    params: [{ name: 'id', in: 'path', required: true }],
    ok: { status: 200, schema: RunContextDto },
  },
  {
    method: 'put',
    path: '/api/sessions/{id}/run-context',
    summary:
      "Replace the session's RunContext (a field left out is cleared; every path inside the workspace, else 400; enabled_mcp_servers: the caller's own servers, else 400 naming the entry; security_group: admins only, else 403)",
    params: [{ name: 'id', in: 'path', required: true }],
    body: RunContextInput,
    ok: { status: 200, schema: RunContextDto },
  },
  {
    method: 'post',
    path: '/api/{source}/uploads',
    summary:
      "Upload an attachment into the caller's workspace (`uploads/<sanitised name>`; a taken name gets ` (n)`), within the upload limit (SKALD_UPLOAD_MAX_BYTES) and the workspace quota (413 past either)",
    params: [{ name: 'source', in: 'path', required: true }],
    multipart: true,
    sized: true,
    capped: ['uploads', 'staged_bytes'],
    ok: { status: 201, schema: Attachment },
  },
  {
    method: 'get',
    path: '/api/files',
    summary:
      "A file of the caller's workspace, with its content type and Content-Disposition; never executable in the page (nosniff, sandboxing CSP, HTML/SVG as attachment). 404 outside the workspace",
    params: [{ name: 'path', in: 'query', required: true, description: '`/workspace/…` or relative to it' }],
    sized: true,
    ok: { status: 200, binary: true },
  },
  {
    method: 'post',
    path: '/api/{source}/cancel',
    summary: "/stop the running turn of the source's session",
    params: [{ name: 'source', in: 'path', required: true }],
    ok: { status: 202 },
  },
  {
    method: 'post',
    path: '/api/tools/{id}/resolve',
    summary: "Approve or reject a tool call by its id (owner: the call's session's user); 409 if answered",
    params: [{ name: 'id', in: 'path', required: true, description: 'tool call id' }],
    body: ResolveToolInput,
    ok: { status: 200, schema: HumanRequestState },
  },
  {
    method: 'get',
    path: '/api/inbox',
    summary: "Pending approvals and questions across the caller's sessions",
    ok: { status: 200, schema: InboxDto },
  },
  {
    method: 'post',
    path: '/api/inbox/approvals/{id}/resolve',
    summary:
      'Approve or reject by request id; 409 if already answered. `bypass_secs` / `bypass_scope` open a session bypass: `call` (the default) is the narrow scope the inbox item lists under `session_approval`, wide scopes (`all`, a category) are explicit',
    params: [{ name: 'id', in: 'path', required: true, description: 'request id' }],
    body: ResolveApprovalInput,
    ok: { status: 200, schema: HumanRequestState },
  },
  {
    method: 'post',
    path: '/api/inbox/clarifications/{id}/resolve',
    summary: 'Answer a question by request id; 409 if already answered',
    params: [{ name: 'id', in: 'path', required: true, description: 'request id' }],
    body: ResolveClarificationInput,
    ok: { status: 200, schema: HumanRequestState },
  },
  {
    method: 'get',
    path: '/api/approval/rules',
    summary:
      'Approval rules in evaluation order: the built-in rules (`built_in: true`, code, read-only) first, then the stored ones',
    auth: 'admin',
    ok: { status: 200, schema: ApprovalRuleList },
  },
  {
    method: 'post',
    path: '/api/approval/rules',
    summary: 'Create an approval rule',
    auth: 'admin',
    body: ApprovalRuleInput,
    ok: { status: 201, schema: ApprovalRuleDto },
  },
  {
    method: 'patch',
    path: '/api/approval/rules/{id}',
    summary: 'Change an approval rule (every replica at once, within 5 s at worst); 409 for a built-in rule',
    auth: 'admin',
    params: [{ name: 'id', in: 'path', required: true }],
    body: ApprovalRulePatch,
    ok: { status: 200, schema: ApprovalRuleDto },
  },
  {
    method: 'delete',
    path: '/api/approval/rules/{id}',
    summary: 'Delete an approval rule; 409 for a built-in rule',
    auth: 'admin',
    params: [{ name: 'id', in: 'path', required: true }],
    ok: { status: 204 },
  },
  {
    method: 'post',
    path: '/api/approval/rules/test',
    summary:
      'What the gate would decide: with session_id, for a call of that session (its agent, source, group, RunContext, auto-deny and bypasses; a differing agent_id/source/security_group is 400); without, for the fields sent (admins only)',
    body: RuleTestInput,
    ok: { status: 200, schema: RuleTestResult },
  },
  {
    method: 'get',
    path: '/api/approval/tools',
    summary:
      'The gate-able tools offered to the caller: registry, synthetic and their discovered ones (category "dynamic"; an admin: every user\'s)',
    ok: { status: 200, schema: KnownToolList },
  },
  {
    method: 'get',
    path: '/api/approval/audit',
    summary: 'Decisions, automatic and human (own sessions; admins all)',
    params: [
      { name: 'session_id', in: 'query' },
      { name: 'page', in: 'query' },
      { name: 'per_page', in: 'query' },
    ],
    ok: { status: 200, schema: AuditList },
  },
  {
    method: 'get',
    path: '/api/approval/bypasses',
    summary: 'Active session bypasses',
    params: [{ name: 'session_id', in: 'query' }],
    ok: { status: 200, schema: BypassList },
  },
  {
    method: 'post',
    path: '/api/approval/bypasses',
    summary:
      "Open a session bypass on one of the caller's sessions (a human only): wide (`all`, a category, an MCP server) or narrow (one tool's program and subcommand, or directory). Deny and command lines the gate cannot read are never bypassed",
    body: CreateBypassInput,
    ok: { status: 201, schema: z.object({ id: z.string() }) },
  },
  {
    method: 'delete',
    path: '/api/approval/bypasses/{id}',
    summary: 'Revoke a session bypass',
    params: [{ name: 'id', in: 'path', required: true }],
    ok: { status: 204 },
  },
  {
    method: 'get',
    path: '/api/mcp/servers',
    summary: "The caller's MCP servers with their status (credentials listed by key only)",
    ok: { status: 200, schema: McpServerList },
  },
  {
    method: 'post',
    path: '/api/mcp/servers',
    summary:
      'Add an MCP server (stdio, run in a sandbox of its own; or streamable HTTP, refused on loopback, private or link-local addresses unless allow-listed)',
    body: McpServerInput,
    ok: { status: 201, schema: McpServerDto },
  },
  {
    method: 'patch',
    path: '/api/mcp/servers/{name}',
    summary:
      'Change an MCP server in place: enabled (false stops it on every tool runner and takes its tools away), or what runs (command, args, env, network; url, headers), which stops the running process; a field of the other transport is 400',
    params: [{ name: 'name', in: 'path', required: true }],
    body: McpServerPatch,
    ok: { status: 200, schema: McpServerDto },
  },
  {
    method: 'delete',
    path: '/api/mcp/servers/{name}',
    summary: 'Remove an MCP server (its connections close on every tool runner)',
    params: [{ name: 'name', in: 'path', required: true }],
    ok: { status: 204 },
  },
  {
    method: 'get',
    path: '/api/cron/jobs',
    summary: "The caller's cron jobs with their next fire and the session of a running run",
    ok: { status: 200, schema: CronJobList },
  },
  {
    method: 'post',
    path: '/api/cron/jobs',
    summary:
      "Schedule an agent (cron: five fields, or six with seconds first; timezone an IANA name; a minimum interval applies; run_context.enabled_mcp_servers: the caller's own servers, else 400; run_context.security_group: admins only, else 403)",
    body: CronJobInput,
    capped: ['cron_jobs'],
    ok: { status: 201, schema: JobCreated },
  },
  {
    method: 'patch',
    path: '/api/cron/jobs/{id}',
    summary:
      "Change a cron job (run_context.enabled_mcp_servers: the caller's own servers, else 400; run_context.security_group: admins only, else 403)",
    params: [{ name: 'id', in: 'path', required: true }],
    body: CronJobPatch,
    ok: { status: 200, schema: CronJobDto },
  },
  {
    method: 'delete',
    path: '/api/cron/jobs/{id}',
    summary: 'Delete a cron job (a running run is cancelled)',
    params: [{ name: 'id', in: 'path', required: true }],
    ok: { status: 204 },
  },
  {
    method: 'post',
    path: '/api/cron/jobs/{id}/toggle',
    summary: 'Enable or disable a cron job',
    params: [{ name: 'id', in: 'path', required: true }],
    ok: { status: 200, schema: CronJobDto },
  },
  {
    method: 'post',
    path: '/api/cron/jobs/{id}/run',
    summary: 'Run a cron job now (also when disabled); 409 while a run is open',
    params: [{ name: 'id', in: 'path', required: true }],
    ok: { status: 202, schema: RunNowReply },
  },
  {
    method: 'post',
    path: '/api/cron/jobs/{id}/kill',
    summary: "Kill a job's running run: its session is cancelled through the same path as /stop",
    params: [{ name: 'id', in: 'path', required: true }],
    ok: { status: 202, schema: KillReply },
  },
  {
    method: 'get',
    path: '/api/cron/runs',
    summary: "Runs of the caller's cron jobs, newest first",
    params: [{ name: 'job_id', in: 'query' }],
    ok: { status: 200, schema: JobRunList },
  },
  {
    method: 'get',
    path: '/api/notifications',
    summary: "The caller's notifications (cron run endings), newest first",
    params: [
      { name: 'before', in: 'query', description: 'a notification id: only older ones' },
      { name: 'limit', in: 'query' },
    ],
    ok: { status: 200, schema: NotificationList },
  },
  {
    method: 'post',
    path: '/api/tic/trigger',
    summary: "Run the caller's periodic system tick now (the `tic` agent in an ephemeral session); 409 while one runs",
    ok: { status: 202, schema: RunNowReply },
  },
  {
    method: 'get',
    path: '/api/{source}/tasks',
    summary: 'Running async tasks of the active session of a source, and failures of the last 30 minutes',
    params: [{ name: 'source', in: 'path', required: true }],
    ok: { status: 200, schema: TaskList },
  },
  {
    method: 'get',
    path: '/api/llm/clients',
    summary: "Configured LLM clients with their health across every worker replica, and the caller's pin for `source`",
    params: [{ name: 'source', in: 'query', description: 'mark the client pinned for this source' }],
    ok: { status: 200, schema: LlmClientList },
  },
  ...agentRoutes(),
  ...openAiRoutes(),
];

/** The agents catalog: the agents a user may run, and their definitions. */
function agentRoutes(): Route[] {
  const id = [{ name: 'id', in: 'path' as const, required: true, description: 'agent id' }];
  return [
    {
      method: 'get',
      path: '/api/agents',
      summary: 'Task agents (what list_agents returns), with the caller’s overrides and own agents',
      ok: { status: 200, schema: AgentList },
    },
    {
      method: 'get',
      path: '/api/agents/{id}',
      summary: 'One agent as the caller sees it (AGENT.md text and meta, with the caller’s override)',
      params: id,
      ok: { status: 200, schema: AgentDetail },
    },
    {
      method: 'put',
      path: '/api/agents/{id}',
      summary:
        'Override a built-in agent’s prompt and / or meta fields for the caller, change the caller’s own agent, or create one (prompt + meta with name and type)',
      params: id,
      body: PutAgentRequest,
      ok: { status: 200, schema: AgentDetail },
    },
    {
      method: 'delete',
      path: '/api/agents/{id}/override',
      summary: 'Remove the caller’s override (the built-in agent is back to its files) or the caller’s own agent',
      params: id,
      ok: { status: 204 },
    },
  ];
}

/** The OpenAI-compatible endpoint (errors in OpenAI's shape: `{error: {message, type, param, code}}`). */
function openAiRoutes(): Route[] {
  return [
    {
      method: 'get',
      path: '/v1/models',
      summary: 'OpenAI-compatible: the agents the caller may use, as models `skald/<agent id>`',
      ok: { status: 200 },
    },
    {
      method: 'post',
      path: '/v1/chat/completions',
      summary:
        'OpenAI-compatible Chat Completions (streamed with `stream: true`): the agent answers the last user message in the conversation the x-skald-conversation header (or metadata.skald_conversation) names, else the one this API token opened whose messages the request extends exactly, else a new one (docs/openai-compatible.md)',
      body: ChatCompletionRequest,
      capped: ['sessions', 'queued_messages'],
      ok: { status: 200 },
    },
  ];
}

const schema = (s: z.ZodType): unknown => z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' });

export function buildOpenApiDocument(): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  const errorContent = { 'application/json': { schema: schema(ErrorResponse) } };
  for (const r of ROUTES) {
    const responses: Record<string, unknown> = {
      [String(r.ok.status)]: {
        description: 'OK',
        ...(r.ok.schema ? { content: { 'application/json': { schema: schema(r.ok.schema) } } } : {}),
        ...(r.ok.binary ? { content: { '*/*': { schema: { type: 'string', format: 'binary' } } } } : {}),
      },
      '400': { description: 'invalid_input', content: errorContent },
    };
    if (r.auth !== 'public') responses['401'] = { description: 'unauthorized', content: errorContent };
    if (r.auth === 'admin') responses['403'] = { description: 'admin only', content: errorContent };
    if (r.sized) responses['413'] = { description: 'too_large', content: errorContent };
    if (r.throttled)
      responses['429'] = {
        description:
          'too many failed password checks for this account from this address, for this address or for this account; retry after Retry-After seconds',
        headers: { 'Retry-After': { schema: { type: 'integer' } } },
        content: errorContent,
      };
    if (r.capped)
      responses['429'] = {
        description: `a per-user limit is reached: ${r.capped.map((c) => `${c} (${USER_CAPS[c].env})`).join(', ')}`,
        content: errorContent,
      };
    if (r.path.includes('{id}'))
      responses['404'] = { description: "not found (also another user's id)", content: errorContent };
    responses['503'] = { description: 'a dependency is down; retry after Retry-After', content: errorContent };
    paths[r.path] ??= {};
    paths[r.path][r.method] = {
      summary: r.summary,
      ...(r.auth === 'public' ? { security: [] } : {}),
      'x-skald-auth': r.auth ?? 'user',
      parameters: (r.params ?? []).map((p) => ({
        name: p.name,
        in: p.in,
        required: p.required ?? false,
        schema: { type: 'string' },
      })),
      ...(r.multipart
        ? {
            requestBody: {
              required: true,
              content: {
                'multipart/form-data': {
                  schema: {
                    type: 'object',
                    properties: { file: { type: 'string', format: 'binary' } },
                    required: ['file'],
                  },
                },
              },
            },
          }
        : {}),
      ...(r.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: schema(r.body) } } } }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Skald API',
      version: '0.1.0',
      description: 'REST part of the Skald client protocol. WebSocket: GET /api/ws?source=.',
    },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    security: [{ bearer: [] }],
    paths,
  };
}
