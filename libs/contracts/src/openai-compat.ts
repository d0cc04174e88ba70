import { z } from 'zod';
import { AgentId } from './agents';
import { Id, StoredText } from './common';

// The OpenAI-compatible endpoint (`/v1`): what a Chat Completions request may say to a Skald agent.

/** A model is an agent the caller may use: `skald/<agent id>`. */
export const OPENAI_MODEL_PREFIX = 'skald/';
/** The header that names the conversation a request continues (and that every answer carries). */
export const OPENAI_CONVERSATION_HEADER = 'x-skald-conversation';
/** The same, as a `metadata` key of the request. */
export const OPENAI_CONVERSATION_METADATA = 'skald_conversation';
/** The header whose value, the same on each try, makes requests one request (its retries). */
export const OPENAI_IDEMPOTENCY_HEADER = 'idempotency-key';
/** The header the OpenAI SDKs number the tries of one request with (1 and more: a retry). */
export const OPENAI_RETRY_COUNT_HEADER = 'x-stainless-retry-count';
/** An `Idempotency-Key`: 1 to 255 printable ASCII characters. */
export const OpenAiIdempotencyKey = z.string().regex(/^[\x21-\x7e][\x20-\x7e]{0,254}$/);
/** Messages one request may carry (the body limit, 1 MiB, usually ends a request first). */
export const OPENAI_MESSAGES_MAX = 1000;

/** `skald/<agent id>` → the agent id; null when the name is not one. */
export function agentOfModel(model: string): string | null {
  if (!model.startsWith(OPENAI_MODEL_PREFIX)) return null;
  const id = model.slice(OPENAI_MODEL_PREFIX.length);
  return AgentId.safeParse(id).success ? id : null;
}

/** The longest text of one message (as a chat message's). */
const MESSAGE_TEXT_MAX = 512 * 1024;

/** A content part: text only (an agent reads files from its workspace, not images from a request). */
const ContentPart = z.object({ type: z.literal('text'), text: StoredText(MESSAGE_TEXT_MAX) });
const Content = z.union([StoredText(MESSAGE_TEXT_MAX), z.array(ContentPart).max(OPENAI_MESSAGES_MAX)], {
  error: 'content must be a string or an array of text parts',
});
const name = StoredText(256).optional();

/**
 * One message of the request. The agent's tools are Skald's own: a `tool` message or an assistant
 * message with `tool_calls` has nothing to answer and is refused, naming the field.
 */
const ChatMessage = z.discriminatedUnion(
  'role',
  [
    z.object({ role: z.literal('system'), content: Content, name }),
    z.object({ role: z.literal('developer'), content: Content, name }),
    z.object({ role: z.literal('user'), content: Content, name }),
    z.object({
      role: z.literal('assistant'),
      content: Content.nullable().optional(),
      name,
      refusal: StoredText(MESSAGE_TEXT_MAX).nullable().optional(),
      reasoning_content: StoredText(MESSAGE_TEXT_MAX).nullable().optional(),
      tool_calls: z.array(z.unknown()).max(0, 'tool calls are the agent’s own; send the answer’s text only').optional(),
    }),
  ],
  { error: 'role must be system, developer, user or assistant (tools are the agent’s own)' },
);

const Stop = z.union([StoredText(256).min(1), z.array(StoredText(256).min(1)).min(1).max(4)]).nullable();

/**
 * A Chat Completions request. Sampling fields the agent's own models decide (`temperature`,
 * `max_tokens`, …) and fields of other vendors are accepted and left unused, as OpenAI-compatible
 * servers do; what would change the answer's shape and cannot be honoured is refused: `n` above 1,
 * tools, response formats other than text.
 */
export const ChatCompletionRequest = z.object({
  model: StoredText(256).min(1),
  messages: z.array(ChatMessage).min(1).max(OPENAI_MESSAGES_MAX),
  stream: z.boolean().nullable().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullable().optional(),
  stop: Stop.optional(),
  n: z.literal(1, { error: 'n: only one choice is answered' }).nullable().optional(),
  tools: z.array(z.unknown()).max(0, 'tools are the agent’s own; send none').nullable().optional(),
  tool_choice: z.literal('none', { error: 'tools are the agent’s own' }).nullable().optional(),
  functions: z.array(z.unknown()).max(0, 'functions are the agent’s own; send none').nullable().optional(),
  response_format: z
    .object({ type: z.literal('text', { error: 'only text answers are given' }) })
    .nullable()
    .optional(),
  metadata: z.record(StoredText(64), StoredText(512)).nullable().optional(),
  user: StoredText(256).optional(),
});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;
export type ChatCompletionMessage = ChatCompletionRequest['messages'][number];

/** A conversation id as a client names it (header or `metadata`). */
export const OpenAiConversationId = Id;

/** A message's text: a string, or its text parts joined. */
export function messageText(m: ChatCompletionMessage): string {
  const c = m.content;
  if (c === null || c === undefined) return '';
  return typeof c === 'string' ? c : c.map((p) => p.text).join('');
}

/**
 * The message list as a conversation stores and matches it: role and text only (names, refusals,
 * reasoning and sampling fields do not make two lists different), `developer` read as `system`.
 */
export function canonicalMessages(
  messages: readonly ChatCompletionMessage[],
): { role: 'system' | 'user' | 'assistant'; content: string }[] {
  return messages.map((m) => ({ role: m.role === 'developer' ? 'system' : m.role, content: messageText(m) }));
}

/** System messages a new conversation keeps at most, as its RunContext prompt parts. */
export const OPENAI_SYSTEM_MAX = 20;
/** A system message's text as a RunContext prompt part stores it (no NUL, no lone surrogate). */
export const OpenAiSystemText = StoredText(10_000);
