/** Token estimates: 4 characters a token, the same rough measure everywhere in the loop. */
import type { WireMessage, WireTool } from './types';

export const CHARS_PER_TOKEN = 4;

export function messageChars(m: WireMessage): number {
  let chars = 0;
  if (typeof m.content === 'string') chars += m.content.length;
  else if (Array.isArray(m.content)) for (const p of m.content) chars += p.text.length;
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
