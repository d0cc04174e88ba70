/**
 * Data shapes of the agent loop: stored rows, store mutations, session / ephemeral event drafts,
 * OpenAI chat-completions wire messages and turn outcomes. Plain data only, no behaviour.
 *
 * Ids are UUID strings allocated by the loop through the `IdsPort` before a row is written.
 * Rows are ordered by the store's insertion order (a monotonic `ord`), never by id.
 */

// ---------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------

/** `user`: typed by a human; `agent`: a prompt handed to a sub-agent (or a system injection);
 *  `assistant`: produced by the model (with or without tool calls). */
export type MessageRole = 'user' | 'agent' | 'assistant';

/** `failed`: an orphaned user row (its turn was stopped before the model answered); excluded
 *  from the model's context but kept in the store. */
/** `superseded`: replaced by a regenerate or an edit; kept, never projected. */
export type MessageStatus = 'ok' | 'failed' | 'superseded';

export interface Attachment {
  path: string;
  name: string;
  mimetype?: string;
  filesize?: number;
}

export interface MessageRow {
  id: string;
  sessionId: string;
  frameId: string;
  role: MessageRole;
  content: string;
  reasoningContent: string | null;
  status: MessageStatus;
  isSynthetic: boolean;
  attachments: Attachment[] | null;
  clientMessageId: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  /** Assistant rows: USD of the call at the client's prices (null / absent: unknown). */
  costUsd?: number | null;
  /** Assistant rows: the token counts are an estimate (the provider reported no usage). */
  tokensEstimated?: boolean;
  /** Assistant rows: the client that answered, and its model. */
  llmClient?: string | null;
  llmModel?: string | null;
  /** ISO 8601 UTC, from the clock port. */
  createdAt: string;
}

export type ToolCallStatus =
  'pending' | 'running' | 'awaiting_human' | 'done' | 'failed' | 'rejected' | 'cancelled' | 'interrupted';

export const TERMINAL_TOOL_STATUSES: readonly ToolCallStatus[] = [
  'done',
  'failed',
  'rejected',
  'cancelled',
  'interrupted',
];

export interface ToolCallRow {
  /** Durable id (our UUID): used in events, approvals, REST. */
  id: string;
  sessionId: string;
  frameId: string;
  /** The assistant message that carried the call. */
  messageId: string;
  /** Position of the call inside its assistant message (0-based). */
  index: number;
  /** The model's own call id, used only in the wire projection. */
  llmCallId: string;
  name: string;
  /** The model's arguments exactly as sent (raw JSON text, possibly invalid JSON). */
  argumentsText: string;
  status: ToolCallStatus;
  /** Meaning depends on status: `done` → result; `failed` and `interrupted` → error message
   *  (without `Error: `); `rejected` → the rejection sentence the model sees; `cancelled` → the
   *  note (`Cancelled by user.`); otherwise null. */
  result: string | null;
  /** Result type for `tool_done` (e.g. `text`). */
  resultType: string | null;
  /** Human request id (approval or question), allocated before the awaiting_human write and
   *  reused when recovery asks again. */
  requestId: string | null;
  /** For a sync delegation (execute_task / execute_subtask): the child frame it opened. */
  childFrameId: string | null;
  /** `baseHash` of the preview shown with the current approval request (null / absent: none).
   *  An approved run must still find its file with this hash. */
  previewHash?: string | null;
  /** Times the human was asked again because an approved preview could not be reproduced. */
  staleReasks?: number;
  /**
   * Where the gate judged the call's paths to land when it asked a human (`GateDecision` `require`
   * `landing`; null / absent: not known). Kept with the approval request: the approved call runs
   * bound to it (`ToolRunOptions.judgedLanding`), after a park or a restart too.
   */
  judgedLanding?: ReadonlyArray<string | null> | null;
}

export type FrameStatus = 'active' | 'closed';

/** A stack frame: the root conversation of a session (depth 0) or a sub-agent run. */
export interface FrameRow {
  id: string;
  sessionId: string;
  parentFrameId: string | null;
  /** The parent's tool call that spawned this frame (null for the root). */
  parentToolCallId: string | null;
  agentId: string;
  depth: number;
  status: FrameStatus;
  /** Client pinned for this frame (a child's `client` argument); null → agent client / AUTO. */
  clientPin: string | null;
}

export type InboxDelivery = 'steer' | 'queue' | 'interrupt';

/** A durable inbox item that has not entered the conversation yet. */
export interface InboxItem {
  /** Also the id the chat row gets when the item enters the conversation. */
  id: string;
  sessionId: string;
  clientMessageId: string;
  content: string;
  attachments: Attachment[] | null;
  delivery: InboxDelivery;
  createdAt: string;
  /** A system delivery (an async task's ending, a notification): it enters as a synthetic
   *  assistant message carrying one completed call of this tool, not as a user message. */
  toolResult?: SyntheticToolResult | null;
  /** System-made input (a tic's periodic prompt): it enters as a synthetic user row, which the
   *  model reads and the chat does not show (no `user_message` echo). Absent: false. */
  isSynthetic?: boolean;
  /** A regenerate or an edit-and-resend, carried out when the item starts its turn (absent: none). */
  rewind?: InboxRewind | null;
}

/**
 * `regenerate`: the rows after the user message `messageId` are superseded and the turn answers
 * that message again (the item becomes no row). `edit`: that message and every row after it are
 * superseded and the item's content enters as a new user message.
 */
export interface InboxRewind {
  kind: 'regenerate' | 'edit';
  messageId: string;
}

/** A completed system-injected call (`task_completed`, `read_notification`). */
export interface SyntheticToolResult {
  toolName: string;
  /** JSON text of the call's arguments. */
  argumentsText: string;
  result: string;
}

export interface ScratchpadNote {
  key: string;
  value: string;
}

export type TodoStatus = 'pending' | 'in_progress' | 'done';
export interface TodoItem {
  content: string;
  status: TodoStatus;
}

export interface CompactionSummary {
  frameId: string;
  summary: string;
  /** The last message row folded into the summary; history is loaded after it. */
  boundaryMessageId: string;
}

/** Tool groups (`activate_tools`) are granted per session at the root, per frame in sub-agents. */
export type GrantScope = { kind: 'session'; sessionId: string } | { kind: 'frame'; frameId: string };

export interface RunContext {
  /** Absolute path inside /workspace; relative tool paths resolve against it. */
  workingDirectory: string | null;
  /** Extra system prompt fragments, appended to the dynamic tail. */
  systemPrompt: string[];
  /** Pre-authorised paths (the gate's fast path): reads inside them need no human. */
  allowFsReads?: string[];
  /** Pre-authorised paths for writes (and reads). */
  allowFsWrites?: string[];
  /**
   * Tool groups (MCP server names) granted to every frame of the session without `activate_tools`;
   * when any is named, `activate_tools` is not offered (the override is the whole choice).
   */
  enabledMcpServers?: string[];
}

export type AgentType = 'chat' | 'task' | 'system';

export interface SessionInfo {
  id: string;
  userId: string;
  agentId: string;
  source: string;
  isInteractive: boolean;
  isEphemeral: boolean;
  autoDenyApprovals: boolean;
  /** The session whose scratchpad this session reads and writes (the parent's for async tasks). */
  scratchpadSessionId: string;
  runContext: RunContext;
  /** The session's security group: its rules are evaluated before the default ones. */
  securityGroup?: string | null;
  /** Client pinned by `select_client` for the root agent; null → AUTO. */
  pinnedClient: string | null;
  /** The session's current turn: written by the loop in the same commits as the input entering
   *  (`running`), a park (`parked`) and the terminal event (`finished`). */
  turnState: TurnState;
  /** The id of the message that started the session's current (or last) turn; null before the
   *  first turn. Written with `running` when new input starts a turn. */
  turnId?: string | null;
}

/** `finished` also for a session that never ran a turn. */
export type TurnState = 'running' | 'parked' | 'finished';

// ---------------------------------------------------------------------------------------------
// Mutations (the store's single write method applies a list of these atomically)
// ---------------------------------------------------------------------------------------------

export type NewMessage = Omit<MessageRow, 'status'> & { status?: MessageStatus };
export type NewToolCall = ToolCallRow;
export type NewFrame = FrameRow;

export interface ToolCallPatch {
  status: ToolCallStatus;
  result?: string | null;
  resultType?: string | null;
  requestId?: string | null;
  childFrameId?: string | null;
  previewHash?: string | null;
  staleReasks?: number;
  judgedLanding?: ReadonlyArray<string | null> | null;
}

export type Mutation =
  /** Append a chat row (to the end of its frame). */
  | { kind: 'appendMessage'; message: NewMessage }
  /** Mark a row failed (orphaned): kept, excluded from context. */
  | { kind: 'markMessageFailed'; messageId: string }
  /** Mark rows superseded (regenerate, edit-and-resend): kept, excluded from context. */
  | { kind: 'supersedeMessages'; messageIds: string[] }
  /** A pending inbox item enters the conversation: it is removed from the inbox and becomes the
   *  chat row `message` (whose id equals the item's id). */
  | { kind: 'enterInbox'; inboxId: string; message: NewMessage }
  /** A pending inbox item is kept out of the conversation by a /stop (kept, marked discarded). */
  | { kind: 'discardInbox'; inboxId: string }
  /** A pending inbox item started a turn without becoming a row (a regenerate): marked entered. */
  | { kind: 'consumeInbox'; inboxId: string }
  | { kind: 'createToolCall'; call: NewToolCall }
  | { kind: 'updateToolCall'; id: string; patch: ToolCallPatch }
  | { kind: 'openFrame'; frame: NewFrame }
  /** Close an active frame; closing a closed frame is an error. */
  | { kind: 'closeFrame'; frameId: string }
  /** Set (value) or delete (null) one scratchpad key. */
  | { kind: 'setScratchpad'; scratchpadSessionId: string; key: string; value: string | null }
  | { kind: 'setTodos'; sessionId: string; frameId: string; todos: TodoItem[] }
  /** Add tool groups to a grant scope (idempotent). */
  | { kind: 'grantTools'; scope: GrantScope; groups: string[] }
  /** Replace the frame's compaction summary and boundary. */
  | { kind: 'setCompaction'; summary: CompactionSummary }
  /** Set the session's turn state; a new turn also names its id (the message that started it). */
  | { kind: 'setTurnState'; sessionId: string; state: TurnState; turnId?: string };

// ---------------------------------------------------------------------------------------------
// Events (PROTOCOL.md "Server → client"), snake_case, without session_id / seq
// ---------------------------------------------------------------------------------------------

export type SessionEventDraft =
  | {
      type: 'user_message';
      message_id: string;
      client_message_id?: string;
      content: string;
      attachments?: Attachment[];
    }
  | { type: 'message_discarded'; message_id: string; client_message_id: string }
  /** `keeps_message` (a regenerate): the message `from_message_id` stays, only the rows after it go. */
  | { type: 'messages_superseded'; from_message_id: string; keeps_message?: boolean }
  | {
      type: 'thinking';
      message_id: string;
      content: string;
      reasoning_content?: string;
      input_tokens?: number;
      output_tokens?: number;
    }
  | {
      type: 'tool_start';
      tool_call_id: string;
      message_id: string;
      name: string;
      /** Parsed JSON the model sent, or the raw string if it was invalid JSON. */
      arguments: unknown;
      label_short: string;
      label_full: string;
      path?: string;
    }
  | { type: 'tool_done'; tool_call_id: string; result: string; result_type: string }
  | { type: 'tool_error'; tool_call_id: string; error: string }
  | { type: 'tool_cancelled'; tool_call_id: string }
  | { type: 'tool_rejected'; tool_call_id: string; reason: string }
  | {
      type: 'pending_write';
      request_id: string;
      tool_call_id: string;
      /** `file`: a write (`path`) with its diff; `command`: an `execute_cmd` call (`new_content` is `$ <command>`). */
      kind: 'file' | 'command';
      path?: string;
      old_content?: string;
      new_content: string;
    }
  | {
      type: 'approval_required';
      request_id: string;
      tool_call_id: string;
      tool_name: string;
      arguments: unknown;
    }
  | {
      type: 'agent_question';
      request_id: string;
      tool_call_id: string;
      title: string;
      question: string;
      suggested_answers: string[];
    }
  | {
      type: 'agent_start';
      stack_id: string;
      parent_tool_call_id: string;
      agent_id: string;
      parent_agent_id: string;
      depth: number;
      prompt_preview: string;
    }
  | {
      type: 'agent_done';
      stack_id: string;
      parent_tool_call_id: string;
      agent_id: string;
      parent_agent_id: string;
      depth: number;
      result_preview: string;
    }
  | { type: 'file_changed'; path: string }
  /** A tool (`open_file`) asks the user's file viewer to show a workspace file. */
  | { type: 'open_file'; path: string }
  | { type: 'model_fallback'; from: string; to: string; reason: string }
  | { type: 'llm_failed'; tried: string[]; last_error: string }
  | {
      type: 'done';
      message_id: string;
      stack_id: string;
      content: string;
      input_tokens?: number;
      output_tokens?: number;
      reasoning_content?: string;
    }
  | { type: 'truncated'; output_tokens?: number }
  | { type: 'error'; message: string; code: string; field?: string; request_id?: string };

export type SessionEventType = SessionEventDraft['type'];

/** Live-only events: never stored, never replayed. */
export type EphemeralEvent =
  /**
   * A piece of a model call's text as it streams: `depth` is the frame's (0: the root agent, more:
   * a sub-agent), `offset` where `delta` starts in the call's text of its `kind` (0 again when the
   * call is tried again).
   */
  | {
      type: 'token_delta';
      session_id: string;
      message_id: string;
      depth: number;
      kind: 'content' | 'reasoning';
      offset: number;
      delta: string;
    }
  | { type: 'tool_progress'; session_id: string; tool_call_id: string; stream: 'stdout' | 'stderr'; chunk: string };

// ---------------------------------------------------------------------------------------------
// OpenAI chat-completions wire objects (the projection's output)
// ---------------------------------------------------------------------------------------------

export interface WireTextPart {
  type: 'text';
  text: string;
  cache_control?: { type: 'ephemeral' };
}

export interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** An image as the model receives it: a `data:` URL (never a remote URL). */
export interface WireImagePart {
  type: 'image_url';
  image_url: { url: string };
}

/**
 * A workspace image the projection refers to (an image attachment, a `read_file` of an image).
 * Never sent: before each model call the loop turns it into a `WireImagePart` (a client that can
 * see images, through `ImagePort`), a text marker (over the client's limits, or unreadable), or
 * nothing (a client without vision). `label`: text put before the image for the model (a tool
 * result's image says which call it came from); none for an attachment, which the attachment
 * block already names.
 */
export interface WireImageRef {
  type: 'image_ref';
  path: string;
  label?: string;
}

export type WireUserPart = WireTextPart | WireImagePart | WireImageRef;

export type WireMessage =
  | { role: 'system'; content: string | WireTextPart[] }
  | { role: 'user'; content: string | WireUserPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: WireToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** An OpenAI function tool definition. */
export interface WireTool {
  type: 'function';
  function: { name: string; description?: string; parameters: Record<string, unknown> };
}

// ---------------------------------------------------------------------------------------------
// Outcomes
// ---------------------------------------------------------------------------------------------

export interface ToolCallSummary {
  id: string;
  llmCallId: string;
  name: string;
  argumentsText: string;
  status: ToolCallStatus;
  result: string | null;
}

/**
 * What a turn (or a recovery / resolution) ended with. Lease loss is not an outcome: the
 * `LeaseLostError` thrown by the store is rethrown after every in-flight branch was aborted.
 */
export type TurnOutcome =
  /** The model answered with text; `toolCalls` holds every call recorded by this run. */
  | {
      kind: 'final';
      messageId: string;
      content: string;
      reasoningContent: string | null;
      inputTokens: number | null;
      outputTokens: number | null;
      truncated: boolean;
      toolCalls: ToolCallSummary[];
    }
  /** /stop (the signal), or a human wait that ended as cancelled. */
  | { kind: 'cancelled' }
  /** `maxToolRounds` rounds without a final answer. */
  | { kind: 'exhausted'; rounds: number }
  /** Every LLM client failed (or a non-retriable error), or the LLM port refused (`code`, e.g. `exhausted`). */
  | { kind: 'failed'; error: string; code?: string }
  /** The human-wait port asked to park: the call stays `awaiting_human`, no terminal event was
   *  written; `resolvePendingCall` continues the turn later. */
  | { kind: 'parked'; toolCallId: string; requestId: string }
  /** `recoverTurn` found nothing unfinished. */
  | { kind: 'idle' };

export type TurnOutcomeKind = TurnOutcome['kind'];
