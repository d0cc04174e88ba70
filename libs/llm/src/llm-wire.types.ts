/**
 * The OpenAI chat-completions wire shapes the manager sends, declared here so that callers (the
 * agent loop's projection) can build them without importing the `openai` SDK.
 */

export interface LlmTextPart {
  type: 'text';
  text: string;
  /** For providers that take cache-control blocks (see the client's `cacheControl` flag). */
  cache_control?: { type: 'ephemeral' };
}

export interface LlmImagePart {
  type: 'image_url';
  image_url: { url: string; detail?: 'auto' | 'low' | 'high' };
}

export interface LlmWireToolCall {
  id: string;
  type: 'function';
  /** `arguments` is JSON text, exactly as the model produced it. */
  function: { name: string; arguments: string };
}

export type LlmWireMessage =
  | { role: 'system' | 'developer'; content: string | LlmTextPart[]; name?: string }
  | { role: 'user'; content: string | Array<LlmTextPart | LlmImagePart>; name?: string }
  | { role: 'assistant'; content: string | LlmTextPart[] | null; tool_calls?: LlmWireToolCall[]; name?: string }
  | { role: 'tool'; tool_call_id: string; content: string | LlmTextPart[] };

export interface LlmToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}

export type LlmDelta = { kind: 'content' | 'reasoning'; delta: string };

export interface LlmChatRequest {
  messages: LlmWireMessage[];
  tools?: LlmToolDefinition[];
  /** Aborting it closes the HTTP connection; the call then fails with `LlmCallError{aborted: true}`. */
  signal?: AbortSignal;
  /** Called for each content / reasoning delta as it arrives. */
  onDelta?: (delta: LlmDelta) => void;
  /** Per-call body parameters (e.g. `tool_choice`), over the client's `extraParams`. */
  params?: Record<string, unknown>;
}

export interface LlmToolCall {
  id: string;
  name: string;
  /** The arguments JSON text as streamed (not parsed: it may be invalid, and the loop decides). */
  argumentsText: string;
}

export interface LlmUsage {
  inputTokens: number;
  outputTokens: number;
  /** Prompt tokens served from the provider's cache, when reported. */
  cachedInputTokens?: number;
  /** Reasoning tokens (part of outputTokens), when reported. */
  reasoningTokens?: number;
}

/** What one call consumed, always known: the provider's numbers or an estimate. */
export interface LlmMeteredUsage {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  /** True when the provider reported no usage and the counts are estimated (characters / 4). */
  estimated: boolean;
  /** USD at the client's configured prices; null when the client has none. */
  costUsd: number | null;
}

export type LlmFinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'other';

export interface LlmChatResult {
  clientName: string;
  model: string;
  content: string;
  reasoning: string;
  toolCalls: LlmToolCall[];
  /** null when the provider sent no usage (the caller estimates). */
  usage: LlmUsage | null;
  /** Tokens and cost of the call (from `usage`, or estimated when it is null). */
  metered: LlmMeteredUsage;
  finishReason: LlmFinishReason;
}
