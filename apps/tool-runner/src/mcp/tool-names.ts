import { createHash } from 'node:crypto';

/** What the model APIs accept as a function name. */
export const MAX_TOOL_NAME = 64;

/**
 * `mcp__<server>__<tool>` (PROTOCOL.md). A tool name the APIs would refuse is made safe: characters
 * outside `[A-Za-z0-9_-]` become `_`, and when the whole name would pass 64 characters the tool part
 * is cut and suffixed with `_` and 6 hex characters of the hash of the original tool name.
 */
export function mcpWireName(server: string, tool: string): string {
  const prefix = `mcp__${server}__`;
  const safe = tool.replace(/[^A-Za-z0-9_-]/g, '_');
  if (prefix.length + safe.length <= MAX_TOOL_NAME && safe === tool) return prefix + safe;
  const hash = createHash('sha256').update(tool).digest('hex').slice(0, 6);
  const room = MAX_TOOL_NAME - prefix.length - 7;
  return `${prefix}${safe.slice(0, room)}_${hash}`;
}

/** The server part of a wire name, or null when it is not an MCP tool name. */
export function mcpServerOf(wireName: string): string | null {
  const m = /^mcp__([a-z0-9_-]{1,24}?)__./.exec(wireName);
  return m ? m[1] : null;
}
