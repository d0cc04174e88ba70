/** Token estimates: 4 characters a token, the same rough measure everywhere in the loop. */
import type { WireMessage, WireTool } from './types';

export const CHARS_PER_TOKEN = 4;

/**
 * What one image in a request is counted as, in tokens, wherever the loop measures context (the
 * budget, compaction's threshold, `/context`): about what an image fitted to 1568 px costs on the
 * common vision models (Anthropic: width × height / 750, capped near 1,600; OpenAI high detail:
 * 85 + 170 per 512 px tile, 1,105 at most). An image reference counts the same as the image it
 * becomes, so a request is measured before images are loaded.
 */
export const IMAGE_TOKENS = 1_600;

export function messageChars(m: WireMessage): number {
  let chars = 0;
  if (typeof m.content === 'string') chars += m.content.length;
  else if (Array.isArray(m.content))
    for (const p of m.content) {
      if (p.type === 'text') chars += p.text.length;
      else chars += IMAGE_TOKENS * CHARS_PER_TOKEN + (p.type === 'image_ref' ? (p.label?.length ?? 0) : 0);
    }
  if (m.role === 'assistant' && m.tool_calls) {
    for (const c of m.tool_calls) chars += c.function.name.length + c.function.arguments.length;
  }
  return chars;
}

/** Estimated tokens of a list of messages. */
export function estimateTokens(messages: WireMessage[]): number {
  let chars = 0;
  for (const m of messages) chars += messageChars(m);
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** Estimated tokens of the tool definitions offered with a request. */
export function estimateToolTokens(tools: WireTool[]): number {
  return tools.length === 0 ? 0 : Math.ceil(JSON.stringify(tools).length / CHARS_PER_TOKEN);
}
