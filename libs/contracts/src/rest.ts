import { z } from 'zod';
import { AgentId } from './agents';
import {
  Attachment,
  ClientMessageId,
  Delivery,
  Id,
  Role,
  Source,
  SourceFilter,
  StoredText,
  Timestamp,
  ToolCallStatus,
} from './common';
import { ApprovalPreview, HumanDecision } from './ws';

export const LoginRequest = z.object({ email: z.email().max(320), password: z.string().min(1).max(1024) });
export type LoginRequest = z.infer<typeof LoginRequest>;
export const UserDto = z.object({ id: Id, email: z.string(), role: Role });
export type UserDto = z.infer<typeof UserDto>;
export const LoginResponse = z.object({ token: z.string(), expires_at: Timestamp, user: UserDto });
export type LoginResponse = z.infer<typeof LoginResponse>;
/** `GET /api/auth/options`: how the login page lets people in. */
export const LoginOptions = z.object({
  /** False when `SKALD_PASSWORD_LOGIN=off`: the page shows only the providers' buttons. */
  password_login: z.boolean(),
  providers: z.array(z.object({ id: z.string(), label: z.string() })),
});
export type LoginOptions = z.infer<typeof LoginOptions>;
/** A single sign-on provider's id, as in `SKALD_OIDC_PROVIDERS`. */
export const OidcProviderId = z.string().regex(/^[a-z0-9][a-z0-9-]{0,31}$/);
/** `POST /api/auth/oidc/redeem`: the handoff the callback put in the login page's fragment (`#oidc=…`). */
export const OidcRedeemRequest = z.object({ handoff: z.string().regex(/^sso_[A-Za-z0-9_-]{43}$/) });
/** A session, where to go now (a same-origin path) and the provider it came from (its logout). */
export const OidcRedeemResponse = LoginResponse.extend({ return_to: z.string(), provider: OidcProviderId });
export const WsTicketResponse = z.object({ ticket: z.string() });

/** A password a user sets: 8 to 1024 characters (the same bounds wherever one is set). */
export const NewPassword = z.string().min(8).max(1024);
/** `PUT /api/auth/password`: the caller changes their own password, proving the current one. */
export const ChangePasswordRequest = z.object({
  current_password: z.string().min(1).max(1024),
  new_password: NewPassword,
});
export type ChangePasswordRequest = z.infer<typeof ChangePasswordRequest>;
export const CreateUserRequest = z.object({
  email: z.email().max(320),
  password: NewPassword,
  role: Role.default('user'),
});
export const CreateTokenRequest = z.object({ name: StoredText(100).min(1) });
export const CreateTokenResponse = z.object({ id: Id, name: z.string(), token: z.string() });
export const TokenDto = z.object({
  id: Id,
  name: z.string(),
  created_at: Timestamp,
  last_used_at: Timestamp.nullable(),
});
export const TokenList = z.object({ items: z.array(TokenDto) });
/** `PATCH /api/admin/users/{id}`: at least one of role, disabled, password. */
export const PatchUserRequest = z
  .object({ role: Role.optional(), disabled: z.boolean().optional(), password: NewPassword.optional() })
  .refine((v) => v.role !== undefined || v.disabled !== undefined || v.password !== undefined, 'nothing to change');
export const AdminUserDto = UserDto.extend({ disabled: z.boolean() });
export const AdminUserList = z.object({ items: z.array(AdminUserDto.extend({ created_at: Timestamp })) });

export const SessionSummary = z.object({
  id: Id,
  source: z.string(),
  agent_id: z.string(),
  is_ephemeral: z.boolean(),
  is_interactive: z.boolean(),
  created_at: Timestamp,
  message_count: z.number().int(),
  last_message_at: Timestamp.nullable(),
  /** Generated from the first exchange or set by the user; null until then. */
  title: z.string().nullable(),
  /** The active session of its source (the one a new message goes to). */
  is_active: z.boolean(),
  /** The LLM client chosen for this conversation (null: AUTO). */
  client: z.string().nullable(),
});
export type SessionSummary = z.infer<typeof SessionSummary>;
/** Search words: plain text (quotes, `-word` and `or` as in a web search), never query syntax. */
export const SessionSearchText = StoredText(200).trim().min(1);
export const SessionListQuery = z.object({
  source: SourceFilter.optional(),
  q: SessionSearchText.optional(),
  page: z.coerce.number().int().min(1).default(1),
  per_page: z.coerce.number().int().min(1).max(100).default(20),
});
export type SessionListQuery = z.infer<typeof SessionListQuery>;
/**
 * `GET /admin/sessions/{id}`: another user's conversation as an admin reads it — its summary and
 * whose it is (`owner.email` null when the account no longer exists).
 */
export const AdminSessionDto = SessionSummary.extend({
  owner: z.object({ id: Id, email: z.string().nullable() }),
});
export type AdminSessionDto = z.infer<typeof AdminSessionDto>;
export const SessionList = z.object({
  items: z.array(SessionSummary),
  total: z.number().int(),
  page: z.number().int(),
  per_page: z.number().int(),
});
export type SessionList = z.infer<typeof SessionList>;
/** `GET /sessions?q=`: the caller's conversations whose messages match, best match first. */
export const SessionSearchHit = z.object({
  id: Id,
  source: z.string(),
  title: z.string().nullable(),
  /** The best matching message of the conversation, cut around the match. */
  snippet: z.string(),
  last_message_at: Timestamp.nullable(),
});
export type SessionSearchHit = z.infer<typeof SessionSearchHit>;
export const SessionSearchList = z.object({
  items: z.array(SessionSearchHit),
  total: z.number().int(),
  page: z.number().int(),
  per_page: z.number().int(),
});
export type SessionSearchList = z.infer<typeof SessionSearchList>;
/** `PATCH /sessions/{id}`. */
export const RenameSessionRequest = z.object({ title: StoredText(200).trim().min(1) });
export type RenameSessionRequest = z.infer<typeof RenameSessionRequest>;
export const RenamedSession = z.object({ id: Id, title: z.string() });
export const SessionActivated = z.object({ session_id: Id, source: z.string() });
export const ExportFormat = z.enum(['markdown', 'json']);
export type ExportFormat = z.infer<typeof ExportFormat>;
export const ExportQuery = z.object({ format: ExportFormat.default('markdown') });
/** `POST /{source}/regenerate`: answer the last user message again. */
export const RegenerateRequest = z.object({ client_message_id: ClientMessageId });
/** `POST /{source}/messages/{id}/edit`: replace a user message and continue from it. */
export const EditMessageRequest = z.object({
  content: z
    .string()
    .min(1)
    .max(512 * 1024),
  client_message_id: ClientMessageId,
});

const Tokens = {
  input_tokens: z.number().int().nullable(),
  output_tokens: z.number().int().nullable(),
  /** USD at the answering client's prices (null: no prices configured). */
  cost_usd: z.number().nullable().optional(),
  /** The provider reported no usage: the counts are estimated. */
  tokens_estimated: z.boolean().optional(),
  /** The client that answered, and its model. */
  client: z.string().nullable().optional(),
  model: z.string().nullable().optional(),
};
export const DebugRow = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('user'),
    id: Id,
    content: z.string(),
    is_synthetic: z.boolean(),
    /** Replaced by a regenerate or an edit: kept here, never sent to the model. */
    superseded: z.boolean().optional(),
    /**
     * `discarded`: sent while a turn ran and dropped by a `/stop` before it entered the conversation
     * (never sent to the model); it stands where it was sent.
     */
    status: z.enum(['ok', 'failed', 'superseded', 'discarded']),
    attachments: z.array(Attachment).optional(),
    created_at: Timestamp,
  }),
  z.object({
    kind: z.literal('thinking'),
    id: Id,
    content: z.string(),
    reasoning: z.string().nullable(),
    is_synthetic: z.boolean(),
    /** Replaced by a regenerate or an edit: kept here, never sent to the model. */
    superseded: z.boolean().optional(),
    created_at: Timestamp,
    ...Tokens,
  }),
  z.object({
    kind: z.literal('assistant'),
    id: Id,
    content: z.string(),
    reasoning: z.string().nullable(),
    is_synthetic: z.boolean(),
    /** Replaced by a regenerate or an edit: kept here, never sent to the model. */
    superseded: z.boolean().optional(),
    created_at: Timestamp,
    ...Tokens,
  }),
  z.object({
    kind: z.literal('tool'),
    id: Id,
    name: z.string(),
    arguments: z.union([z.record(z.string(), z.unknown()), z.string()]),
    status: ToolCallStatus,
    result: z.string().nullable(),
    is_synthetic: z.boolean(),
    /** Replaced by a regenerate or an edit: kept here, never sent to the model. */
    superseded: z.boolean().optional(),
    created_at: Timestamp,
  }),
  z.object({
    kind: z.literal('agent'),
    stack_id: Id,
    agent_id: z.string(),
    depth: z.number().int(),
    is_synthetic: z.boolean(),
    created_at: Timestamp,
  }),
  z.object({
    kind: z.literal('agent_end'),
    stack_id: Id,
    agent_id: z.string(),
    depth: z.number().int(),
    is_synthetic: z.boolean(),
    created_at: Timestamp,
  }),
]);
export type DebugRow = z.infer<typeof DebugRow>;
export const SessionDetail = z.object({
  session: z.object({
    id: Id,
    title: z.string().nullable().optional(),
    source: z.string(),
    agent_id: z.string(),
    is_interactive: z.boolean(),
    is_ephemeral: z.boolean(),
    created_at: Timestamp,
  }),
  messages: z.array(DebugRow),
});
export type SessionDetail = z.infer<typeof SessionDetail>;

export const PostMessageRequest = z.object({
  client_message_id: ClientMessageId,
  content: z.string().max(512 * 1024),
  attachments: z.array(Attachment).max(32).optional(),
  delivery: Delivery.optional(),
});
export type PostMessageRequest = z.infer<typeof PostMessageRequest>;
export const PostMessageResponse = z.object({ message_id: Id, client_message_id: z.string(), duplicate: z.boolean() });
export type PostMessageResponse = z.infer<typeof PostMessageResponse>;
/** A settled approval of a call in the chat history: the request, and approved, rejected or cancelled. */
export const ChatApprovalOutcome = z.object({
  request_id: Id,
  outcome: z.enum(['approved', 'rejected', 'cancelled']),
  /** Who answered, when, where, and the session approval it opened (as `approval_resolved` carries it). */
  decision: HumanDecision.optional(),
  /** The file change the card showed (a write's path, old and new text), as the live `pending_write` carried it. */
  preview: ApprovalPreview.omit({ base_hash: true }).optional(),
});
export type ChatApprovalOutcome = z.infer<typeof ChatApprovalOutcome>;
export const ChatMessageDto = z.object({
  id: Id,
  role: z.enum(['user', 'assistant']),
  content: z.string(),
  attachments: z.array(Attachment).optional(),
  created_at: Timestamp,
  tool_calls: z
    .array(
      z.object({
        id: Id,
        name: z.string(),
        arguments: z.union([z.record(z.string(), z.unknown()), z.string()]),
        status: ToolCallStatus,
        result: z.string().nullable(),
        /** What `tool_start` shows of the call: `$ <command>`, `<tool> <path>`, or the tool's name. */
        label_short: z.string(),
        /** The workspace path the call names, as `tool_start` carries it. */
        path: z.string().optional(),
        /** How the human answered the call's approval (a call that never asked, or still waits: absent). */
        approval: ChatApprovalOutcome.optional(),
      }),
    )
    .optional(),
});
export type ChatMessageDto = z.infer<typeof ChatMessageDto>;
export const ChatMessagesQuery = z.object({
  before: Id.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
/**
 * `GET /{source}/messages`. `session_id`, `resume_seq`: the session the page is of, and
 * the seq a client passes as `resume {last_seq}` to receive only what the page does not cover
 * (the session's last seq, or — while a turn is unfinished — the seq before that turn began, so
 * its cards are rebuilt from its events; rows the page already holds come again and are matched
 * by id). Read in one snapshot with the page.
 */
export const ChatMessages = z.object({
  items: z.array(ChatMessageDto),
  has_more: z.boolean(),
  session_id: Id.optional(),
  resume_seq: z.number().int().nonnegative().optional(),
});
export type ChatMessages = z.infer<typeof ChatMessages>;
export const CreateSessionResponse = z.object({ session_id: Id });
export type CreateSessionResponse = z.infer<typeof CreateSessionResponse>;
/**
 * `POST /api/sessions?source=&agent_id=`: the source the new session is active for (`web` when
 * left out) and the agent that answers it (the default agent when left out).
 */
export const CreateSessionQuery = z.object({ source: Source.optional(), agent_id: AgentId.optional() });
/** `GET /api/approval/bypasses?session_id=`: one session's bypasses only. */
export const BypassQuery = z.object({ session_id: Id.optional() });
/** The JSON export of a conversation: what the chat shows, oldest first (superseded and synthetic rows left out). */
export const SessionExport = z.object({
  session: z.object({
    id: Id,
    title: z.string().nullable(),
    source: z.string(),
    agent_id: z.string(),
    created_at: Timestamp,
  }),
  messages: z.array(ChatMessageDto),
});
export type SessionExport = z.infer<typeof SessionExport>;

export const ErrorResponse = z.object({
  error: z.object({ code: z.string(), message: z.string(), field: z.string().optional() }),
});

/** `GET /files?path=`: a workspace file of the caller, as the model names it (`/workspace/…` or relative). */
export const FilePathQuery = z.object({ path: StoredText(4096).min(1) });
