/**
 * Ports: everything the loop needs from the world. The session worker implements them with
 * Postgres (store), the approval service (gate, human wait), the tool runner (tool set), the LLM
 * manager (llm), NATS (event sink) and the agents catalog; `@skald/agent-loop/testing` ships
 * in-memory fakes of each.
 */
import type {
  AgentType,
  CompactionSummary,
  EphemeralEvent,
  FrameRow,
  GrantScope,
  InboxItem,
  MessageRow,
  Mutation,
  RunContext,
  ScratchpadNote,
  SessionEventDraft,
  SessionInfo,
  TodoItem,
  ToolCallRow,
  WireMessage,
  WireTool,
} from './types';
import type { LlmRetryPolicy } from './llm-retry';

// ---------------------------------------------------------------------------------------------
// Store
// ---------------------------------------------------------------------------------------------

/**
 * Thrown by `SessionStore.commit` when the writer no longer holds the session lease (its fencing
 * epoch is stale). The loop aborts every in-flight branch of the turn, writes nothing more and
 * rethrows it from `runTurn` / `recoverTurn` / `resolvePendingCall`.
 */
export class LeaseLostError extends Error {
  readonly code = 'lease_lost';
  constructor(message = 'session lease lost') {
    super(message);
    this.name = 'LeaseLostError';
  }
}

export interface ListMessagesOptions {
  /** Only rows inserted after this message (a compaction boundary). */
  afterMessageId?: string | null;
  /** Include rows with status `failed` (default false). */
  includeFailed?: boolean;
}

/**
 * The durable state of sessions. Read methods return rows in insertion order. The only write is
 * `commit`, which is atomic and fenced by the caller's lease.
 */
export interface SessionStore {
  /** The session's identity, flags, run context and pinned client. Throws if unknown. */
  getSession(sessionId: string): Promise<SessionInfo>;
  /** Active frames of a session, ordered by depth, then insertion order. */
  listActiveFrames(sessionId: string): Promise<FrameRow[]>;
  /** One frame (active or closed) or null. */
  getFrame(frameId: string): Promise<FrameRow | null>;
  /** Chat rows of a frame in insertion order (failed rows excluded unless asked for). */
  listMessages(frameId: string, options?: ListMessagesOptions): Promise<MessageRow[]>;
  /** Tool calls of a frame in insertion order (= call order within each assistant message). */
  listToolCalls(frameId: string): Promise<ToolCallRow[]>;
  /** One tool call by its durable id, or null. */
  getToolCall(toolCallId: string): Promise<ToolCallRow | null>;
  /** Scratchpad notes of a (scratchpad) session in key insertion order. */
  getScratchpad(scratchpadSessionId: string): Promise<ScratchpadNote[]>;
  /** Latest todo list written by `write_todos` in a frame (empty if none). */
  getTodos(frameId: string): Promise<TodoItem[]>;
  /** Granted tool groups of a scope (`activate_tools`). */
  getGrants(scope: GrantScope): Promise<string[]>;
  /** The frame's compaction summary, or null. */
  getCompaction(frameId: string): Promise<CompactionSummary | null>;
  /** Inbox items of the session that have not entered the conversation nor been discarded,
   *  oldest first. */
  listInbox(sessionId: string): Promise<InboxItem[]>;
  /**
   * Apply all mutations and append all events (assigning each the session's next contiguous
   * `seq`, in array order) in one transaction — or nothing. Throws `LeaseLostError` if fenced.
   */
  commit(sessionId: string, mutations: Mutation[], events: SessionEventDraft[]): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Events, ids, clock
// ---------------------------------------------------------------------------------------------

/** Live-only output (token deltas, tool progress). Must not throw; fire-and-forget. */
export interface EventSink {
  /** Publish an ephemeral event (never stored, never replayed). */
  ephemeral(event: EphemeralEvent): void;
}

export interface IdsPort {
  /** A fresh UUID string for a row / request id. */
  newId(): string;
}

export interface ClockPort {
  /** Current time. */
  now(): Date;
  /** The effective IANA time zone (e.g. `Europe/Rome`), shown to the model. */
  timeZone(): string;
  /** Optional: wait `ms` or until `signal` aborts (a fake clock advances instead); default a timer. */
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Gate and human wait
// ---------------------------------------------------------------------------------------------

export interface GateRequest {
  sessionId: string;
  userId: string;
  source: string;
  agentId: string;
  depth: number;
  toolCallId: string;
  name: string;
  /** Effective arguments (after working-directory injection); raw string if not JSON. */
  arguments: unknown;
  /** The session's RunContext (working directory, pre-authorised paths): the gate's fast path. */
  runContext: RunContext;
  /** The session's security group (null: the default rules only). */
  securityGroup: string | null;
  /** The session cannot ask a human (a headless run, `autoDenyApprovals`): a Require is refused. */
  autoDeny: boolean;
}

export type GateDecision =
  /**
   * `landing`: where the gate judged the call's paths to land (the tool runner's resolution); the
   * call is run bound to it (`ToolRunOptions.judgedLanding`).
   */
  | { kind: 'allow'; landing?: ReadonlyArray<string | null> }
  /** `reason` is the sentence the model sees as the tool result (status `rejected`). */
  | { kind: 'deny'; reason: string }
  /**
   * `landing` as for `allow`: the call is asked about, and once approved run bound to it (kept on
   * the call row, `judgedLanding`).
   */
  | { kind: 'require'; landing?: ReadonlyArray<string | null> };

/** "May this call run?" (rules, bypasses, run-context fast path). */
/** Who a round's tools are offered to, for `GatePort.visibleTools`. */
export interface VisibilityRequest {
  sessionId: string;
  userId: string;
  source: string;
  agentId: string;
  securityGroup: string | null;
  /** Every tool the round would offer (the tool set's and the loop's own). */
  names: readonly string[];
}

export interface GatePort {
  check(request: GateRequest): Promise<GateDecision>;
  /**
   * The names a call could ever be allowed for: an unconditional Deny hides a tool, the loop's own
   * included. Null when the gate cannot say now (every name stays offered; `check` still decides
   * each call). Optional: a gate without it hides nothing.
   */
  visibleTools?(request: VisibilityRequest): Promise<ReadonlySet<string> | null>;
  /**
   * The path a human should be shown as where the call lands: the judged `landing`'s path when it
   * is not the path the call names (a symlink on the way), else null. Optional: without it the
   * card shows the named path only.
   */
  landsAt?(request: GateRequest, landing: ReadonlyArray<string | null>): string | null;
}

export interface ApprovalPreview {
  path: string;
  oldContent?: string;
  newContent: string;
  /**
   * Opaque hash of the file the preview was computed from. Kept on the call row (`previewHash`)
   * and handed to `run()` once approved: a file that changed meanwhile makes the run answer
   * `stale` (nothing written) and the human is asked again with a fresh preview.
   */
  baseHash?: string;
}

/** A write the tool set will not preview, and so no human is asked about: `refused` names why. */
export interface PreviewRefusal {
  refused: string;
}

export function isPreviewRefusal(p: ApprovalPreview | PreviewRefusal | null): p is PreviewRefusal {
  return p !== null && 'refused' in p;
}

export type HumanRequest =
  | {
      kind: 'approval';
      /** Allocated by the loop and stored on the call row; the same id on every re-ask. */
      requestId: string;
      sessionId: string;
      userId: string;
      source: string;
      toolCallId: string;
      toolName: string;
      arguments: unknown;
      preview: ApprovalPreview | null;
      /** Where the call lands when that is not the path it names (`GatePort.landsAt`); shown on the card. */
      landsAt?: string;
      /**
       * What the gate judged the call with: an edit of the call by the human is judged again
       * with exactly these (the approval service keeps them with the request).
       */
      gate?: Pick<GateRequest, 'agentId' | 'securityGroup' | 'runContext'>;
    }
  | {
      kind: 'question';
      requestId: string;
      sessionId: string;
      userId: string;
      source: string;
      toolCallId: string;
      title: string;
      question: string;
      suggestedAnswers: string[];
    };

/**
 * A human approved the call with other arguments: the arguments it runs with (validated and
 * judged by the approval service) and a unified diff of each changed argument.
 */
export interface HumanEdit {
  arguments: Record<string, unknown>;
  diff: string;
}

export type HumanAnswer =
  | { kind: 'approved'; edit?: HumanEdit }
  | { kind: 'rejected'; note?: string | null }
  | { kind: 'answered'; answer: string }
  /** /stop, interrupt, job kill or session reset. Never a client disconnecting. */
  | { kind: 'cancelled' }
  /** Stop waiting in memory: the call stays `awaiting_human` and the turn ends `parked`. */
  | { kind: 'park' };

export interface HumanWaitPort {
  /**
   * Register the request (idempotently by `requestId`; the awaiting_human row and the approval
   * event are already committed) and wait for the answer. When `signal` aborts, resolve with
   * `cancelled` promptly.
   */
  /**
   * Optional: register the request durably BEFORE its card (the awaiting_human row and the
   * approval / question event) is committed, so that an answer sent the instant the card is seen
   * finds the request. Idempotent by `requestId`; `awaitHuman` is still called afterwards.
   */
  prepare?(request: HumanRequest): Promise<void>;
  awaitHuman(request: HumanRequest, signal: AbortSignal): Promise<HumanAnswer>;
}

// ---------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------

export type RestartHint = 'reExecute' | 'markInterrupted';

export type ToolResult =
  | {
      ok: true;
      content: string;
      /** Defaults to `text`. */
      resultType?: string;
      /** Files the call wrote (emitted as `file_changed`). */
      changedPaths?: string[];
      /** Files to show the user (emitted as `open_file`). */
      openedPaths?: string[];
    }
  /** `stale`: the run was refused because its file changed since the approved preview
   *  (`ToolRunOptions.expectedBaseHash`); nothing was written. `interrupted`: the executor was
   *  lost after the call was handed over; it may or may not have taken effect (never re-run). */
  | { ok: false; error: string; stale?: true; interrupted?: true };

export interface ToolRunOptions {
  /** The `baseHash` of the preview the human approved; absent when the call was not previewed. */
  expectedBaseHash?: string;
  /** Where the gate judged the call's paths to land: a file write lands there or fails. */
  judgedLanding?: ReadonlyArray<string | null>;
}

export interface ToolProgress {
  stream: 'stdout' | 'stderr';
  chunk: string;
}

/** One call, built from its name and effective arguments; runs once. */
export interface ToolExecution {
  /** Safe to run concurrently with other calls of the same batch. */
  readonly concurrencySafe: boolean;
  /** What recovery does with a call found `running`: run it again or mark it `interrupted`. */
  readonly restartHint: RestartHint;
  /** Run the call. Throwing counts as a failure with the error's message. */
  run(signal: AbortSignal, onProgress: (progress: ToolProgress) => void, options?: ToolRunOptions): Promise<ToolResult>;
  /** Abort a running call now (kill the process tree). Called when the turn's signal aborts. */
  stop(): void;
  /**
   * Diff preview for an approval card (`pending_write`); null → `approval_required`. A refusal
   * (the path resolves outside the workspace) ends the call as `tool_error` before any card.
   */
  preview?(): Promise<ApprovalPreview | PreviewRefusal | null>;
}

export interface ToolContext {
  sessionId: string;
  userId: string;
  source: string;
  agentId: string;
  frameId: string;
  depth: number;
  /** Granted tool groups visible this round (MCP server names, `config`). */
  grants: string[];
  runContext: SessionInfo['runContext'];
  /** The session's security group (null: the default rules only). */
  securityGroup?: string | null;
}

export interface ToolSpec {
  definition: WireTool;
  /** Never offered to sub-agents. */
  rootAgentOnly?: boolean;
  /** Only offered to sub-agents. */
  subAgentsOnly?: boolean;
}

export interface ToolInvocation {
  toolCallId: string;
  name: string;
  /** Effective arguments (working directory injected); raw string if the JSON was invalid. */
  arguments: unknown;
  argumentsText: string;
}

/** Every tool that is not a loop concern: file tools, execute_cmd, memory, MCP. */
export interface ToolSetPort {
  /** Tools offered this round (called every round, so granted groups appear at once). */
  definitions(ctx: ToolContext): Promise<ToolSpec[]>;
  /** Groups `activate_tools` may grant (MCP server names; `config` only where configuration tools exist). */
  groups(ctx: ToolContext): Promise<string[]>;
  /** Build the execution of one call; an unknown tool may return an execution that fails. */
  build(call: ToolInvocation, ctx: ToolContext): ToolExecution;
  /** Short / full labels and path for `tool_start`; optional. */
  label?(name: string, args: unknown): { short: string; full: string; path?: string };
}

/** Async delegation (`execute_task` mode `async`), implemented by the scheduler. */
export interface AsyncTaskPort {
  /** Submit a durable job (idempotent by `idempotencyKey` = the tool call id). */
  submitAsync(request: {
    idempotencyKey: string;
    sessionId: string;
    userId: string;
    source: string;
    parentToolCallId: string;
    scratchpadSessionId: string;
    agentId: string;
    prompt: string;
    title: string | null;
    description: string | null;
    client: string | null;
  }): Promise<{ jobId: string }>;
}

/** Long-term memory context for the dynamic tail (root frame only). */
export interface MemoryPort {
  queryContext(sessionId: string, userText: string): Promise<string | null>;
  /**
   * The tool whose reads the context stands for (the user's memory documents are files `read_file`
   * reads): the context is given only to a frame offered that tool this round — not to an agent
   * whose filter or an unconditional Deny withholds it. Unset: the context needs no tool.
   */
  readonly readTool?: string;
  /**
   * Said before the root frame's agent loads, with the text its `queryContext` will be asked with:
   * an adapter may fetch the context together with the agent's own lookups (its memory documents),
   * in one request. A hint only: `queryContext` is asked all the same, and may get another text
   * (a compaction at turn start, input steered in).
   */
  expectQuery?(sessionId: string, userText: string): void;
}

// ---------------------------------------------------------------------------------------------
// LLM
// ---------------------------------------------------------------------------------------------

export interface LlmClientDescriptor {
  /** Client name (as in `model_fallback`, `select_client`). */
  name: string;
  /** The provider wants `cache_control` blocks on the static system prompt. */
  cacheControl: boolean;
  /** The model sees images, within these limits; null / absent: it cannot (images are left out). */
  vision?: VisionLimits | null;
}

/** What a vision client takes: images are resized and re-encoded to fit (`ImagePort.load`). */
export interface VisionLimits {
  /** Longest side of an image, in pixels. */
  maxSide: number;
  /** Bytes of one encoded image (before base64). */
  maxBytes: number;
  /** Images in one request: the newest are sent, older ones become a marker. */
  maxImages: number;
}

/** One workspace image, ready for a vision client, or why it cannot be shown. */
export type LoadedImage =
  { ok: true; dataUrl: string; width: number; height: number; bytes: number } | { ok: false; reason: string };

/**
 * Images for vision clients. The loop only refers to images by workspace path (an attachment, a
 * `read_file` result); the service behind this port reads, decodes, resizes and re-encodes them
 * (never the loop).
 */
export interface ImagePort {
  /** The workspace image a stored tool result shows (a `read_file` of an image), or null. */
  resultImage(call: Pick<ToolCallRow, 'name' | 'status' | 'resultType' | 'result'>): string | null;
  /** The image at `path` (an absolute `/workspace/…` path) of `userId`, fitted to `limits`. */
  load(request: { userId: string; path: string; limits: VisionLimits }, signal: AbortSignal): Promise<LoadedImage>;
}

export interface LlmToolCall {
  /** The model's call id. */
  id: string;
  name: string;
  /** Raw arguments text as streamed. */
  argumentsText: string;
}

/** Tokens and cost of one call, stored with the assistant message it produced. */
export interface LlmUsage {
  inputTokens: number;
  outputTokens: number;
  /** The provider reported nothing: the counts are the port's estimate. */
  estimated?: boolean;
  /** USD at the client's prices; null / absent when unknown. */
  costUsd?: number | null;
}

export interface LlmResponse {
  content: string;
  reasoningContent: string | null;
  toolCalls: LlmToolCall[];
  usage: LlmUsage | null;
  /** The model the client called (for the message's record); absent when unknown. */
  model?: string;
  /** `stop`, `tool_calls`, `length` (→ `truncated`), `content_filter`, … */
  finishReason: string;
}

export interface LlmDelta {
  kind: 'content' | 'reasoning';
  delta: string;
}

/** An LLM failure classified by the port: retriable errors are retried, then fall back. */
export class LlmError extends Error {
  readonly retriable: boolean;
  /** The provider's `Retry-After`, in ms, when it gave one. */
  readonly retryAfterMs?: number;
  constructor(message: string, retriable: boolean, retryAfterMs?: number) {
    super(message);
    this.name = 'LlmError';
    this.retriable = retriable;
    if (retryAfterMs !== undefined) this.retryAfterMs = retryAfterMs;
  }
}

export interface ClientSelection {
  agentId: string;
  /** The agent's scope (e.g. `coding`) for AUTO selection; null / absent: any. */
  scope?: string | null;
  /** Explicit client: session pin (root), `client` argument (child), or the agent's client. */
  pinned: string | null;
  /** Agent strength for AUTO selection. */
  strength: string | null;
  /** Names already tried in this round (in order). */
  tried: string[];
}

/** Who a call is for (the port may meter it, e.g. against a user's daily budget). */
export interface LlmCallContext {
  sessionId: string;
  userId: string;
  agentId: string;
  frameId: string;
  /** The assistant message the call produces (a round); null for a compaction summary. */
  messageId: string | null;
  purpose: 'round' | 'compaction';
}

/** Why the port refuses to call any model for this user now (e.g. `exhausted`: budget used up). */
export interface LlmRefusal {
  /** The `error` event's code. */
  code: string;
  /** The sentence the user sees. */
  message: string;
}

export interface LlmPort {
  /** Which client next; null when none is left. */
  nextClient(selection: ClientSelection): Promise<LlmClientDescriptor | null> | LlmClientDescriptor | null;
  /**
   * Optional: asked before each round's model call. A refusal ends the frame as failed with the
   * refusal's code and message (the turn's `error` event), without trying any client. `pinned`:
   * the client the round would use by name (the session's pin, the child's `client`, the agent's
   * client), null for AUTO selection; absent for a compaction summary.
   */
  admit?(
    context: Omit<LlmCallContext, 'messageId' | 'purpose'> & { pinned?: string | null },
  ): Promise<LlmRefusal | null>;
  /**
   * One streaming chat completion. Abort on `signal`. Errors must be `LlmError` (anything else
   * is treated as non-retriable).
   */
  stream(
    client: LlmClientDescriptor,
    request: { messages: WireMessage[]; tools: WireTool[] },
    signal: AbortSignal,
    onDelta: (delta: LlmDelta) => void,
    context?: LlmCallContext,
  ): Promise<LlmResponse>;
}

// ---------------------------------------------------------------------------------------------
// Agents
// ---------------------------------------------------------------------------------------------

export interface AgentDefinition {
  id: string;
  name: string;
  description: string | null;
  /** The static system prompt (may contain `__KEY__` sentinels). */
  prompt: string;
  type: AgentType;
  /** Explicit client name; null → AUTO by strength. */
  client: string | null;
  strength: string | null;
  /** Scope for AUTO selection (clients serving it are preferred); null / absent: any. */
  scope?: string | null;
  /**
   * The agent's tool filters (`meta.json` `tools`), compiled by the catalog in the tool-pattern
   * language of libs/contracts: whether a tool may be offered to this agent.
   */
  tools: AgentToolFilter;
  /** `__KEY__` → value substitutions applied to the prompt. */
  substitutions: Record<string, string>;
  /** Short reminder appended as the last system message. */
  tailReminder: string | null;
}

/** Whether a tool may be offered to an agent: its filters, compiled (deny wins; no allow list: every tool). */
export interface AgentToolFilter {
  allows(toolName: string): boolean;
}

export interface AgentSummary {
  id: string;
  name: string;
  description: string | null;
  strength: string | null;
}

export interface AgentCatalogPort {
  /** One agent as seen by this user (with the user's override), or null. */
  getAgent(agentId: string, userId: string): Promise<AgentDefinition | null>;
  /** Task agents (what `list_agents` returns). */
  listTaskAgents(userId: string): Promise<AgentSummary[]>;
}

// ---------------------------------------------------------------------------------------------
// Configuration and the bundle handed to the entry points
// ---------------------------------------------------------------------------------------------

export interface CompactionConfig {
  /** Compact at turn start when the projected context exceeds this many (estimated) tokens. */
  thresholdTokens: number;
  /** Message rows kept verbatim after the boundary (at least; the kept part starts at a user row
   *  when one is near). */
  keepRecent: number;
  /** Strength of the summarising model (AUTO selection). */
  strength: string | null;
}

export interface LoopConfig {
  maxToolRounds: number;
  /** Clients a round may try (the first and its fallbacks) before `llm_failed`. */
  maxLlmAttempts: number;
  /** Retries of a retriable error on the same client before the next one. */
  llmRetry: LlmRetryPolicy;
  /** Concurrency bound for an all-`concurrencySafe` batch (1 = sequential). */
  maxParallelCalls: number;
  /** History rows kept when compaction is off. */
  maxHistoryMessages: number;
  /** Hide previous turns' tool results longer than this; null = never. */
  maxToolResultChars: number | null;
  /** null = compaction off. */
  compaction: CompactionConfig | null;
  /**
   * The model's usable context, in estimated tokens (4 characters a token); null = unlimited.
   * When the projected messages would exceed it, the largest tool results are cut (with a notice)
   * until they fit, so one huge result cannot overflow the model's window.
   */
  contextBudgetTokens: number | null;
  /** Deepest sub-agent depth (root = 0). */
  maxDepth: number;
  /** Shown in the dynamic tail. */
  os: string;
  /** The working directory shown in the dynamic tail when the session sets none (relative paths
   *  resolve against it); null = no line. */
  defaultWorkingDirectory: string | null;
}

export interface LoopDeps {
  store: SessionStore;
  gate: GatePort;
  human: HumanWaitPort;
  tools: ToolSetPort;
  llm: LlmPort;
  events: EventSink;
  catalog: AgentCatalogPort;
  clock: ClockPort;
  /** Images for vision clients; absent: no image reaches any model (as for a client without vision). */
  images?: ImagePort;
  ids: IdsPort;
  /** Absent → `execute_task` mode async fails with a clear error. */
  tasks?: AsyncTaskPort;
  memory?: MemoryPort;
  config: LoopConfig;
}
