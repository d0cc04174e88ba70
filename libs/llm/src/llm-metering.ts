import type { LlmClientDefinition, LlmPricing } from './llm-client-config';
import type { LlmChatRequest, LlmMeteredUsage, LlmToolCall, LlmUsage } from './llm-wire.types';

/** Characters per token of the rough estimate used when a provider reports no usage. */
export const CHARS_PER_TOKEN = 4;

function textOf(content: unknown): number {
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let chars = 0;
  for (const part of content as Array<{ type?: string; text?: unknown }>) {
    if (typeof part?.text === 'string') chars += part.text.length;
    // An image costs the provider a few hundred tokens; count it as such rather than as nothing.
    else if (part?.type === 'image_url') chars += 85 * CHARS_PER_TOKEN;
  }
  return chars;
}

/** Estimated prompt tokens of a request: its messages' text, tool calls and tool definitions. */
export function estimateInputTokens(request: Pick<LlmChatRequest, 'messages' | 'tools'>): number {
  let chars = 0;
  for (const m of request.messages) {
    chars += textOf(m.content) + 4 * CHARS_PER_TOKEN; // role and framing
    if (m.role === 'assistant' && m.tool_calls)
      for (const c of m.tool_calls) chars += c.function.name.length + c.function.arguments.length;
  }
  if (request.tools && request.tools.length > 0) chars += JSON.stringify(request.tools).length;
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** Estimated completion tokens of an answer. */
export function estimateOutputTokens(answer: { content: string; reasoning: string; toolCalls: LlmToolCall[] }): number {
  let chars = answer.content.length + answer.reasoning.length;
  for (const c of answer.toolCalls) chars += c.name.length + c.argumentsText.length;
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** USD of a call at the client's prices; null without prices. Cached prompt tokens at the cached price. */
export function costOf(
  pricing: LlmPricing | null,
  usage: { inputTokens: number; outputTokens: number; cachedInputTokens?: number },
): number | null {
  if (!pricing) return null;
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  const usd =
    ((usage.inputTokens - cached) * pricing.inputPerMillion +
      cached * pricing.cachedInputPerMillion +
      usage.outputTokens * pricing.outputPerMillion) /
    1_000_000;
  // Micro-dollar precision: what the ledger stores.
  return Math.round(usd * 1e6) / 1e6;
}

/**
 * What a call consumed: the provider's usage when it reported one, otherwise an estimate from the
 * request and the answer (marked `estimated`), priced with the client's prices.
 */
export function meterCall(
  client: Pick<LlmClientDefinition, 'pricing'>,
  request: Pick<LlmChatRequest, 'messages' | 'tools'>,
  answer: { content: string; reasoning: string; toolCalls: LlmToolCall[]; usage: LlmUsage | null },
): LlmMeteredUsage {
  const usage = answer.usage;
  const tokens = usage
    ? {
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        cachedInputTokens: usage.cachedInputTokens ?? 0,
        estimated: false,
      }
    : {
        inputTokens: estimateInputTokens(request),
        outputTokens: estimateOutputTokens(answer),
        cachedInputTokens: 0,
        estimated: true,
      };
  return { ...tokens, costUsd: costOf(client.pricing, tokens) };
}
