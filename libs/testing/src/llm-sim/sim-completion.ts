import type { SimChatRequest, SimCompletionReply, SimFinishReason } from './sim-types';

/** Builds OpenAI chat-completion objects and stream chunks from a scripted reply. Pure. */

export interface ResolvedToolCall {
  id: string;
  name: string;
  argumentsText: string;
}

export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
}

export interface ResolvedCompletion {
  content: string | null;
  reasoning: string | null;
  toolCalls: ResolvedToolCall[];
  finishReason: SimFinishReason;
  usage: WireUsage | null;
  chunkSize: number | null;
  reasoningField: 'reasoning_content' | 'reasoning';
}

export interface CompletionIdentity {
  id: string;
  created: number;
  model: string;
}

const ARGUMENT_CHUNK = 12;
const SYSTEM_FINGERPRINT = 'fp_llm_sim';

/**
 * What an answer needs of its request once the reply is chosen: the model and whether usage is
 * asked for, and the prompt's token estimate when the reply does not script it. Taken before the
 * reply's first-byte delay, so that the parsed request (tens of KB of objects for a long
 * conversation) is not held through it, to be copied by every young-generation collection meanwhile.
 */
export interface AnswerFacts {
  model: string;
  includeUsage: boolean;
  /** The estimate of the prompt's tokens (JSON of messages and tools / 4); 0 when not needed. */
  promptTokens: number;
}

export function answerFacts(request: SimChatRequest, reply: SimCompletionReply | null): AnswerFacts {
  const needed = reply !== null && !reply.omitUsage && reply.usage?.prompt_tokens === undefined;
  return {
    model: request.model,
    includeUsage: request.stream_options?.include_usage === true,
    promptTokens: needed ? estimateTokens(JSON.stringify(request.messages) + JSON.stringify(request.tools ?? [])) : 0,
  };
}

export function resolveCompletion(
  reply: SimCompletionReply,
  facts: AnswerFacts,
  nextToolCallId: () => string,
): ResolvedCompletion {
  const toolCalls = (reply.tool_calls ?? []).map((call) => ({
    id: call.id ?? nextToolCallId(),
    name: call.name,
    argumentsText: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  }));
  const content = reply.content ?? (toolCalls.length > 0 ? null : '');
  const reasoning = reply.reasoning ?? null;
  const promptTokens = reply.usage?.prompt_tokens ?? facts.promptTokens;
  const reasoningTokens = estimateTokens(reasoning ?? '');
  const completionTokens =
    reply.usage?.completion_tokens ??
    estimateTokens((content ?? '') + toolCalls.map((c) => c.name + c.argumentsText).join('')) + reasoningTokens;
  return {
    content,
    reasoning,
    toolCalls,
    finishReason: reply.finish_reason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    usage: reply.omitUsage
      ? null
      : {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
          prompt_tokens_details: { cached_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: reasoningTokens },
        },
    reasoningField: reply.reasoningField ?? 'reasoning_content',
    chunkSize: reply.chunkSize !== undefined && reply.chunkSize >= 1 ? Math.floor(reply.chunkSize) : null,
  };
}

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** The non-streaming `chat.completion` object. */
export function completionObject(resolved: ResolvedCompletion, identity: CompletionIdentity): Record<string, unknown> {
  const message: Record<string, unknown> = { role: 'assistant', content: resolved.content, refusal: null };
  if (resolved.reasoning !== null) message[resolved.reasoningField] = resolved.reasoning;
  if (resolved.toolCalls.length > 0) {
    message.tool_calls = resolved.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.argumentsText },
    }));
  }
  return {
    id: identity.id,
    object: 'chat.completion',
    created: identity.created,
    model: identity.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{ index: 0, message, logprobs: null, finish_reason: resolved.finishReason }],
    ...(resolved.usage ? { usage: resolved.usage } : {}),
  };
}

/** The `chat.completion.chunk` objects of a streamed answer, in order, without `[DONE]`. */
export function streamChunks(
  resolved: ResolvedCompletion,
  identity: CompletionIdentity,
  includeUsage: boolean,
): Array<Record<string, unknown>> {
  const chunk = (
    delta: Record<string, unknown>,
    finishReason: SimFinishReason | null = null,
  ): Record<string, unknown> => ({
    id: identity.id,
    object: 'chat.completion.chunk',
    created: identity.created,
    model: identity.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(includeUsage ? { usage: null } : {}),
  });
  const chunks = [chunk({ role: 'assistant', content: resolved.content === null ? null : '' })];
  for (const piece of splitText(resolved.reasoning ?? '', resolved.chunkSize)) {
    chunks.push(chunk({ [resolved.reasoningField]: piece }));
  }
  for (const piece of splitText(resolved.content ?? '', resolved.chunkSize)) {
    chunks.push(chunk({ content: piece }));
  }
  resolved.toolCalls.forEach((call, index) => {
    chunks.push(
      chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }),
    );
    for (const piece of splitFixed(call.argumentsText, resolved.chunkSize ?? ARGUMENT_CHUNK)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, resolved.finishReason));
  if (includeUsage && resolved.usage) {
    chunks.push({
      id: identity.id,
      object: 'chat.completion.chunk',
      created: identity.created,
      model: identity.model,
      system_fingerprint: SYSTEM_FINGERPRINT,
      choices: [],
      usage: resolved.usage,
    });
  }
  return chunks;
}

/** Word by word (each word with its trailing whitespace), or fixed-size pieces when a size is given. */
export function splitText(text: string, size: number | null): string[] {
  if (text === '') return [];
  if (size !== null) return splitFixed(text, size);
  return text.match(/\s+|\S+\s*/g) ?? [text];
}

/** Fixed-size pieces counted in code points, so a surrogate pair is never cut. */
function splitFixed(text: string, size: number): string[] {
  const chars = Array.from(text);
  const pieces: string[] = [];
  for (let i = 0; i < chars.length; i += size) pieces.push(chars.slice(i, i + size).join(''));
  return pieces;
}
