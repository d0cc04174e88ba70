import { z } from 'zod';
import { Attachment, ClientMessageId, Delivery, ErrorCode, Id, StoredText, Timestamp } from './common';
import { WAITING_CAPS } from './user-caps';

/** Version of the WS protocol announced in `hello`. */
export const PROTOCOL_VERSION = 1;

// ---------------------------------------------------------------- client → server

export const ClientMessageFrame = z.object({
  type: z.literal('message'),
  client_message_id: ClientMessageId,
  content: z.string().max(512 * 1024),
  attachments: z.array(Attachment).max(32).optional(),
  delivery: Delivery.optional(),
});
export const CancelFrame = z.object({ type: z.literal('cancel') });
export const ResumeFrame = z.object({
  type: z.literal('resume'),
  session_id: Id.optional(),
  last_seq: z.number().int().nonnegative().optional(),
});
/**
 * What a session bypass lets run without asking. Wide: `all`, a tool category, an MCP server —
 * a deliberate choice in the inbox. Narrow **(new)**: one tool, and for `execute_cmd` one
 * program, subcommand and option shape (`{tool: "execute_cmd", program: "git", subcommand:
 * "status", options: ["-s"]}`: `git status` with at most the option `-s`, whatever its value; a
 * null subcommand: the program without positional words; no `options` (a scope stored before
 * they existed): no options at all), for a file tool one directory (`{tool: "write_file",
 * directory: "/workspace/src"}`: files directly in it).
 */
export const BypassScope = z.union([
  z.literal('all'),
  z.object({ category: StoredText(64).min(1) }).strict(),
  z.object({ mcp_server: z.string().regex(/^[a-z0-9_-]{1,24}$/) }).strict(),
  z
    .object({
      tool: z.string().regex(/^[A-Za-z0-9_.:-]{1,256}$/),
      program: StoredText(256).min(1).optional(),
      subcommand: StoredText(256).min(1).nullable().optional(),
      options: z.array(StoredText(256).min(1)).max(64).optional(),
      directory: StoredText(4096).min(1).optional(),
      /** A web tool's host, as the URL's parser spells it (`docs.python.org`): the calls to that host only. */
      host: z
        .string()
        .regex(/^[a-z0-9.:[\]_-]{1,253}$/)
        .optional(),
    })
    .strict()
    .refine(
      (s) => [s.program, s.directory, s.host].filter((x) => x !== undefined).length <= 1,
      'a scope names a program, a directory or a host, not two',
    )
    .refine((s) => s.options === undefined || s.program !== undefined, 'options belong to a program scope'),
]);
export type BypassScope = z.infer<typeof BypassScope>;
/**
 * The scope of a session approval given with an answer: `call` **(new)** is this call's narrow
 * scope, derived by the approval service from the call (what the card shows); the default when
 * `bypass_secs` comes without a scope.
 */
export const SessionApprovalScope = z.union([z.literal('call'), BypassScope]);
export type SessionApprovalScope = z.infer<typeof SessionApprovalScope>;
/**
 * **(new)** The call's arguments as a human edited them before approving: validated by the tool's
 * own schema and judged by the gate again (a Deny refuses the edit, the request stays pending).
 * An edit is a one-off approval: it opens no session approval. Bounded to 512 KiB of JSON, so
 * that the request state carrying it (with its diff) stays within one NATS message.
 */
export const EDITED_ARGUMENTS_MAX_CHARS = 512 * 1024;
export const EditedArguments = z
  .record(StoredText(256), z.unknown())
  .refine((a) => JSON.stringify(a).length <= EDITED_ARGUMENTS_MAX_CHARS, 'the edited arguments are too large');
export type EditedArguments = z.infer<typeof EditedArguments>;
/** The file change an approval card shows: the tool runner's preview of a write, computed from the workspace. */
export const ApprovalPreview = z.object({
  path: z.string(),
  old_content: z.string().optional(),
  new_content: z.string(),
  /** SHA-256 of the file the preview was computed from (absent for a new file). */
  base_hash: z.string().optional(),
});
export type ApprovalPreview = z.infer<typeof ApprovalPreview>;
/** Where a human answered a request: the chat's card, the inbox, the CLI, a push notification, the REST API. */
export const ApprovalChannel = z.enum(['card', 'inbox', 'cli', 'push', 'api']);
export type ApprovalChannel = z.infer<typeof ApprovalChannel>;
/**
 * How a human answered an approval: who (`by_user_id`: the owner, or an admin answering for them),
 * when, where, and the session approval the answer opened (`bypass`: the scope and seconds asked
 * for; absent: a plain answer). A request cancelled by a stop has none.
 */
export const HumanDecision = z.object({
  by_user_id: Id,
  at: Timestamp,
  channel: ApprovalChannel.optional(),
  bypass: z.object({ scope: SessionApprovalScope, secs: z.number().int().nonnegative().optional() }).optional(),
  /** The reason given with a rejection (`reject_tool.note`). */
  note: StoredText(4000).optional(),
  /** The human changed the call's arguments before approving it; the audit holds the original and the edit. */
  edited: z.literal(true).optional(),
});
export type HumanDecision = z.infer<typeof HumanDecision>;
export const ApproveToolFrame = z.object({
  type: z.literal('approve_tool'),
  request_id: Id,
  arguments: EditedArguments.optional(),
  bypass_secs: z
    .number()
    .int()
    .nonnegative()
    .max(30 * 24 * 3600)
    .optional(),
  bypass_scope: SessionApprovalScope.optional(),
});
export const RejectToolFrame = z.object({
  type: z.literal('reject_tool'),
  request_id: Id,
  note: StoredText(4000).optional(),
});
export const AnswerQuestionFrame = z.object({
  type: z.literal('answer_question'),
  request_id: Id,
  answer: StoredText(64 * 1024),
});
export const SelectClientFrame = z.object({ type: z.literal('select_client'), client: StoredText(64).min(1) });
/** Answer the last user message of the active session again (its old answer is superseded). */
export const RegenerateFrame = z.object({
  type: z.literal('regenerate'),
  client_message_id: ClientMessageId,
});
/** Edit-and-resend: the user message `message_id` and everything after it are superseded; `content` enters instead. */
export const EditFrame = z.object({
  type: z.literal('edit'),
  message_id: Id,
  content: z
    .string()
    .min(1)
    .max(512 * 1024),
  client_message_id: ClientMessageId,
});

/** A sign of life the server answers with `pong`: how a client tells a socket that went silent (half-open TCP) from a quiet one. */
export const PingFrame = z.object({ type: z.literal('ping') });

export const ClientFrame = z.discriminatedUnion('type', [
  ClientMessageFrame,
  CancelFrame,
  ResumeFrame,
  ApproveToolFrame,
  RejectToolFrame,
  AnswerQuestionFrame,
  SelectClientFrame,
  RegenerateFrame,
  EditFrame,
  PingFrame,
]);
export type ClientFrame = z.infer<typeof ClientFrame>;
export const CLIENT_FRAME_TYPES = ClientFrame.options.map((o) => o.shape.type.value);

// ---------------------------------------------------------------- server → client: session events

const ToolArgs = z.union([z.record(z.string(), z.unknown()), z.string()]);
/**
 * Where the call's path lands when that is not the path it names (a symlink inside the workspace
 * on the way): the `/workspace/…` path the gate judged it on and an approved run is bound to.
 * Absent when it lands where it says, or when that is not known.
 */
export const LandsAt = z.string().max(4096).optional();

/** What a `pending_write` asks to approve: a file's new content (with its diff), or a command. */
export const PendingWriteKind = z.enum(['file', 'command']);
export type PendingWriteKind = z.infer<typeof PendingWriteKind>;

export const SessionEventBodies = {
  user_message: z.object({
    message_id: Id,
    client_message_id: z.string().optional(),
    content: z.string(),
    attachments: z.array(Attachment).optional(),
  }),
  message_discarded: z.object({ message_id: Id, client_message_id: z.string() }),
  /**
   * A regenerate or an edit replaced the conversation from the user message `from_message_id` on;
   * `keeps_message` (a regenerate): that message stays and is answered again, only the rows after
   * it are replaced.
   */
  messages_superseded: z.object({ from_message_id: Id, keeps_message: z.boolean().optional() }),
  thinking: z.object({
    message_id: Id,
    content: z.string(),
    reasoning_content: z.string().optional(),
    input_tokens: z.number().int().optional(),
    output_tokens: z.number().int().optional(),
  }),
  tool_start: z.object({
    tool_call_id: Id,
    message_id: Id,
    name: z.string(),
    arguments: ToolArgs,
    label_short: z.string(),
    label_full: z.string(),
    path: z.string().optional(),
  }),
  tool_done: z.object({ tool_call_id: Id, result: z.string(), result_type: z.string() }),
  tool_error: z.object({ tool_call_id: Id, error: z.string() }),
  tool_cancelled: z.object({ tool_call_id: Id }),
  tool_rejected: z.object({ tool_call_id: Id, reason: z.string() }),
  /**
   * An approval with something to show, told by `kind`: `"file"`, a write (`path`, `old_content?`,
   * `new_content`); `"command"`, an `execute_cmd` call (`new_content`: `$ <command>`, no `path`).
   */
  pending_write: z.object({
    request_id: Id,
    tool_call_id: Id,
    kind: PendingWriteKind,
    path: z.string().optional(),
    old_content: z.string().optional(),
    new_content: z.string(),
    lands_at: LandsAt,
  }),
  approval_required: z.object({
    request_id: Id,
    tool_call_id: Id,
    tool_name: z.string(),
    arguments: ToolArgs,
    lands_at: LandsAt,
  }),
  agent_question: z.object({
    request_id: Id,
    tool_call_id: Id,
    title: z.string(),
    question: z.string(),
    suggested_answers: z.array(z.string()),
  }),
  agent_start: z.object({
    stack_id: Id,
    parent_tool_call_id: Id,
    agent_id: z.string(),
    parent_agent_id: z.string(),
    depth: z.number().int(),
    prompt_preview: z.string(),
  }),
  agent_done: z.object({
    stack_id: Id,
    parent_tool_call_id: Id,
    agent_id: z.string(),
    parent_agent_id: z.string(),
    depth: z.number().int(),
    result_preview: z.string(),
  }),
  file_changed: z.object({ path: z.string() }),
  open_file: z.object({ path: z.string() }),
  model_fallback: z.object({ from: z.string(), to: z.string(), reason: z.string() }),
  llm_failed: z.object({ tried: z.array(z.string()), last_error: z.string() }),
  done: z.object({
    message_id: Id,
    stack_id: Id,
    content: z.string(),
    input_tokens: z.number().int().optional(),
    output_tokens: z.number().int().optional(),
    reasoning_content: z.string().optional(),
  }),
  truncated: z.object({ output_tokens: z.number().int().optional() }),
  error: z.object({
    message: z.string(),
    code: z.union([ErrorCode, z.string()]),
    field: z.string().optional(),
    request_id: Id.optional(),
  }),
} as const;
export type SessionEventType = keyof typeof SessionEventBodies;
export const SESSION_EVENT_TYPES = Object.keys(SessionEventBodies) as SessionEventType[];

/** A session event as stored and as sent: the body plus `type`, `session_id` and the contiguous `seq`. */
export type SessionEvent = {
  [K in SessionEventType]: { type: K; session_id: string; seq: number } & z.infer<(typeof SessionEventBodies)[K]>;
}[SessionEventType];

export const SessionEventSchema = z.discriminatedUnion(
  'type',
  SESSION_EVENT_TYPES.map((t) =>
    SessionEventBodies[t].extend({ type: z.literal(t), session_id: Id, seq: z.number().int().positive() }),
  ) as unknown as [z.ZodObject<{ type: z.ZodLiteral<string> }>, ...z.ZodObject<{ type: z.ZodLiteral<string> }>[]],
) as unknown as z.ZodType<SessionEvent>;

// ---------------------------------------------------------------- ephemeral, connection and user events

export const EphemeralEventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('token_delta'),
    session_id: Id,
    /** The assistant message the text is of (a round: its `thinking` or `done` carries the whole text). */
    message_id: Id,
    /** The agent's depth: 0 for the conversation's own agent, 1 and more for sub-agents. */
    depth: z.number().int().min(0),
    kind: z.enum(['content', 'reasoning']),
    /** Where `delta` starts in the round's text of its `kind`; 0 again when the model call is tried again. */
    offset: z.number().int().min(0),
    delta: z.string(),
    /** The session's last stored `seq` its worker had announced when the delta was sent (0: not known). */
    after_seq: z.number().int().min(0),
  }),
  z.object({
    type: z.literal('tool_progress'),
    session_id: Id,
    tool_call_id: Id,
    stream: z.enum(['stdout', 'stderr']),
    chunk: z.string(),
  }),
  /**
   * The session's queued input (`client_message_id`: the message that starts the next turn) is held
   * back by a per-user cap (`reason`, its value `limit`); `message` says so in a sentence. Sent once
   * per hold-back of that input by a driver; after a (re)connect `turn_running` says it.
   */
  z.object({
    type: z.literal('turn_waiting'),
    session_id: Id,
    client_message_id: z.string(),
    reason: z.enum(WAITING_CAPS),
    limit: z.number().int().positive(),
    message: z.string(),
  }),
]);
export type EphemeralEvent = z.infer<typeof EphemeralEventSchema>;

/**
 * What a session's turn waits for (`turn_running`): a human's answer (`approval`, `clarification`:
 * the turn is running, parked), or one of the user's turn slots (`turn_slot`: the turn has not
 * started; its input is queued at the per-user cap on concurrent turns, whose value is `limit`).
 */
export const TurnWaitingSchema = z.enum(['approval', 'clarification', 'turn_slot']);
export type TurnWaiting = z.infer<typeof TurnWaitingSchema>;

export type ConnectionEvent =
  | { type: 'hello'; protocol: number; server_version: string; session_id: string }
  | { type: 'ack'; client_message_id: string; message_id: string; duplicate: boolean }
  | { type: 'turn_running'; running: boolean; waiting?: TurnWaiting; limit?: number }
  | {
      type: 'error';
      code: string;
      message: string;
      field?: string;
      request_id?: string;
      /** The refused frame's `client_message_id` (a `message`, `regenerate` or `edit`): that message's turn ends here. */
      client_message_id?: string;
    }
  | { type: 'command_result'; command: string; content: string }
  | { type: 'client_selected'; client: string }
  | { type: 'new_session'; session_id: string }
  | { type: 'pong' };
/** Every connection event's `type` (the reference in docs/protocol.md is generated from it). */
export const CONNECTION_EVENT_TYPES = [
  'hello',
  'ack',
  'turn_running',
  'error',
  'command_result',
  'client_selected',
  'new_session',
  'pong',
] as const satisfies readonly ConnectionEvent['type'][];
// Compile-time completeness: a connection event missing from the list above does not compile.
type MissingConnectionEvent = Exclude<ConnectionEvent['type'], (typeof CONNECTION_EVENT_TYPES)[number]>;
export const CONNECTION_EVENT_TYPES_COMPLETE: MissingConnectionEvent extends never ? true : never = true;

export const UserEventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('approval_requested'),
    request_id: Id,
    tool_call_id: Id,
    session_id: Id,
    source: z.string(),
    tool_name: z.string(),
  }),
  z.object({
    type: z.literal('approval_resolved'),
    request_id: Id,
    tool_call_id: Id,
    session_id: Id,
    source: z.string(),
    approved: z.boolean(),
    cancelled: z.boolean().optional(),
    decision: HumanDecision.optional(),
  }),
  z.object({
    type: z.literal('clarification_requested'),
    request_id: Id,
    tool_call_id: Id,
    session_id: Id,
    source: z.string(),
    title: z.string(),
  }),
  z.object({
    type: z.literal('clarification_resolved'),
    request_id: Id,
    tool_call_id: Id,
    session_id: Id,
    source: z.string(),
  }),
  z.object({
    type: z.literal('task_update'),
    job_id: Id,
    title: z.string(),
    agent_id: z.string(),
    session_id: Id.optional(),
    state: z.enum(['running', 'completed', 'failed', 'cancelled']),
    error: z.string().optional(),
    source: z.string(),
  }),
  z.object({
    type: z.literal('notification'),
    summary: z.string(),
    refs: z.object({ job_id: Id.optional(), run_id: Id.optional(), session_id: Id.optional() }),
    source: z.string(),
  }),
  z.object({ type: z.literal('new_session'), session_id: Id, source: z.string() }),
]);
export type UserEvent = z.infer<typeof UserEventSchema>;

export const StoredTimestamp = Timestamp;

// ---------------------------------------------------------------- the envelope of a forwarded session event

/**
 * What the gateway reads of a live session event before it forwards the publisher's JSON text to
 * the sockets as it is: which session it belongs to, its place there (`seq`), and its `type`. The
 * body is the publisher's: the worker validated it with its own schema when it published it.
 */
export interface SessionEventEnvelope {
  type: string;
  session_id: string;
  seq: number;
}

/** The same UUID rule as `Id` (zod's), without a zod call. */
const UUID_RE = z.regexes.uuid();
/** A type name a newer publisher may add: snake_case, like every event type. */
const EVENT_TYPE_RE = /^[a-z][a-z0-9_]{0,63}$/;
const KNOWN_SESSION_TYPES: ReadonlySet<string> = new Set(SESSION_EVENT_TYPES);
/** Types this version knows as another kind of event: never forwarded as a session event. */
const OTHER_KIND_TYPES: ReadonlySet<string> = new Set(
  [
    ...CONNECTION_EVENT_TYPES,
    ...EphemeralEventSchema.options.map((o) => o.shape.type.value),
    ...UserEventSchema.options.map((o) => o.shape.type.value),
  ].filter((t) => !KNOWN_SESSION_TYPES.has(t)),
);

/**
 * The envelope of a parsed session event, or null when it has none: a JSON object whose
 * `session_id` is an id, whose `seq` is a positive integer, and whose `type` is a session event type
 * — one of this version's, or a snake_case name it does not know (a newer worker's event: forwarded,
 * since clients ignore types they do not know and the `seq` keeps the stream contiguous), never a
 * type this version knows as a connection, user or ephemeral event. Reads three fields; no zod.
 */
export function readSessionEventEnvelope(value: unknown): SessionEventEnvelope | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const { type, session_id, seq } = value as Record<string, unknown>;
  if (typeof type !== 'string' || typeof session_id !== 'string' || typeof seq !== 'number') return null;
  if (!Number.isSafeInteger(seq) || seq < 1) return null;
  if (!UUID_RE.test(session_id)) return null;
  if (!KNOWN_SESSION_TYPES.has(type) && (OTHER_KIND_TYPES.has(type) || !EVENT_TYPE_RE.test(type))) return null;
  return { type, session_id, seq };
}

/** What the gateway reads of a live ephemeral event (`token_delta`, `tool_progress`) before it forwards the text. */
export interface EphemeralEventEnvelope {
  type: EphemeralEvent['type'];
  session_id: string;
}

const EPHEMERAL_TYPES: ReadonlySet<string> = new Set(EphemeralEventSchema.options.map((o) => o.shape.type.value));

/**
 * The envelope of a parsed ephemeral event, or null: a JSON object whose `type` is one of this
 * version's ephemeral types (an unknown one is dropped: it has no `seq` to keep contiguous) and whose
 * `session_id` is an id. Fields the gateway does not know are forwarded, as for session events.
 */
export function readEphemeralEventEnvelope(value: unknown): EphemeralEventEnvelope | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const { type, session_id } = value as Record<string, unknown>;
  if (typeof type !== 'string' || !EPHEMERAL_TYPES.has(type)) return null;
  if (typeof session_id !== 'string' || !UUID_RE.test(session_id)) return null;
  return { type: type as EphemeralEventEnvelope['type'], session_id };
}
