/**
 * Types of llm-sim: the scripted replies a test registers, the latency and failure knobs, and the
 * request log it asserts on. Everything but {@link SimReplyFn} is plain JSON, so the same shapes
 * travel over the admin HTTP API when the sim runs as a separate process.
 */

/** Delays applied to a reply. Per-reply values override the global ones field by field. */
export interface SimLatency {
  /** Delay before the status line and first byte of the answer. */
  firstByteMs?: number;
  /** Delay between two SSE chunks of a streamed answer. */
  betweenChunksMs?: number;
}

export interface SimToolCall {
  name: string;
  /** An object is sent as its JSON text; a string is sent verbatim (possibly invalid JSON on purpose). */
  arguments: Record<string, unknown> | string;
  /** Tool call id; generated (`call_sim_<n>`) when absent. */
  id?: string;
}

export type SimFinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter';

export interface SimUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
}

/** A successful assistant answer, streamed or not depending on the request. */
export interface SimCompletionReply {
  content?: string;
  /** Sent as `reasoning_content` (deltas when streaming, a message field when not); see `reasoningField`. */
  reasoning?: string;
  /** The field the reasoning travels in: `reasoning_content` (default: DeepSeek, vLLM) or `reasoning` (OpenRouter, Ollama). */
  reasoningField?: 'reasoning_content' | 'reasoning';
  /** Send no usage at all, even when the request asks for it (as some local servers do). */
  omitUsage?: boolean;
  tool_calls?: SimToolCall[];
  /** Defaults to `tool_calls` when the reply has tool calls, `stop` otherwise. */
  finish_reason?: SimFinishReason;
  /** Token counts to report; each defaults to an estimate (characters / 4). */
  usage?: SimUsage;
  latency?: SimLatency;
  /** Size in characters of each content / reasoning / arguments delta; default: word by word for text, 12 for arguments. */
  chunkSize?: number;
  /**
   * Destroy the connection after this many SSE chunks were written (the role chunk counts), without
   * the final chunk or `[DONE]`. For a non-streaming request the socket is destroyed before any byte.
   */
  dropAfterChunks?: number;
}

/** A reply that fails instead of answering. */
export type SimFailure =
  /** An HTTP error with an OpenAI-style error body; `retryAfterSeconds` sets `retry-after` (429). */
  | { kind: 'http_error'; status: number; message?: string; type?: string; code?: string; retryAfterSeconds?: number }
  /** Accept the request and never answer, until the client gives up. */
  | { kind: 'timeout' }
  /** Destroy the socket before any byte is written. */
  | { kind: 'drop' }
  /** Stream `afterChunks` chunks, then an in-band `data: {"error":…}` event and close (as some gateways do). */
  | { kind: 'stream_error'; afterChunks: number; message?: string };

export interface SimFailureReply {
  fail: SimFailure;
  latency?: SimLatency;
}

/** A JSON reply: what the admin HTTP API accepts. */
export type SimReplySpec = SimCompletionReply | SimFailureReply;

/** What a reply function sees (in-process scripting only). */
export interface SimRequestContext {
  /** The parsed, validated request body. */
  body: SimChatRequest;
  /** Index of this request in the log. */
  requestId: number;
  /** Text of the last `user` message, '' if none. */
  lastUserText: string;
}

export type SimReplyFn = (ctx: SimRequestContext) => SimReplySpec | Promise<SimReplySpec>;

export type SimReply = SimReplySpec | SimReplyFn;

/** Where a script's `match` marker is looked for. */
export type SimMatchIn = 'any' | 'last_user';

export interface SimScriptInput {
  /**
   * Marker substring. A request whose messages contain it (see `matchIn`) is answered by this
   * script; without it the script feeds the default queue, used when no keyed script matches.
   */
  match?: string;
  /** `any` (default): any message's text; `last_user`: the last user message only. */
  matchIn?: SimMatchIn;
  /** Only answer requests for this model. */
  model?: string;
  replies: SimReply[];
  /** When the queue runs out, keep answering with the last reply instead of falling through. */
  repeatLast?: boolean;
}

export interface SimScriptInfo {
  id: string;
  match: string | null;
  matchIn: SimMatchIn;
  model: string | null;
  total: number;
  consumed: number;
  remaining: number;
  repeatLast: boolean;
}

/** The validated part of a chat-completions request body that the sim reads. */
export interface SimChatRequest {
  model: string;
  messages: SimWireMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  tools?: Array<{ type: 'function'; function: { name: string; description?: string; parameters?: unknown } }>;
  [key: string]: unknown;
}

export interface SimWireMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: unknown;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  name?: string;
  [key: string]: unknown;
}

/** How the sim finished a logged request. */
export type SimOutcome =
  'pending' | 'completed' | 'rejected' | 'http_error' | 'dropped' | 'stream_error' | 'timeout' | 'client_aborted';

export interface SimRequestLogEntry {
  /** 1-based, in arrival order. */
  id: number;
  method: string;
  path: string;
  /** Request headers, lower-case, without credentials (`authorization`, `api-key`, `x-api-key`, `proxy-authorization`). */
  headers: Record<string, string>;
  /** Whether a credential header was sent; its value is never kept. */
  authorization: boolean;
  /** The parsed JSON body, or null when it was not JSON. */
  body: unknown;
  stream: boolean;
  /** Id of the script that answered, null for the unscripted fallback or a rejected request. */
  scriptId: string | null;
  /** HTTP status sent (0 when none was sent: drop, timeout, client gone first). */
  status: number;
  outcome: SimOutcome;
  /** The connection was closed by the client before the reply was complete. */
  clientAborted: boolean;
  /** SSE chunks written (data lines, including `[DONE]`). */
  chunksSent: number;
  /** Error message of a 400 rejection. */
  error: string | null;
  receivedAt: string;
  finishedAt: string | null;
}

export interface SimRequestQuery {
  /** Only requests whose raw body contains this substring (e.g. a test's marker). */
  contains?: string;
  /** Only requests with id greater than this. */
  sinceId?: number;
}

export interface LlmSimOptions {
  /** 0 (default) for an ephemeral port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Global latency, overridable per reply. */
  latency?: SimLatency;
  /** Ids listed by `GET /v1/models`. Any model name is accepted by chat completions. */
  models?: string[];
  /** When set, chat completions require `Authorization: Bearer <apiKey>` (401 otherwise). */
  apiKey?: string;
}
