/**
 * What a tool call from the model must satisfy before anything acts on it. A call that fails a
 * check is stored as the model sent it (the store keeps any string) and ends as `tool_error`
 * naming the problem; the turn goes on.
 */
import type { ToolCallRow } from './types';

/** The tool-name rule of the OpenAI chat API (a name outside it poisons every later request). */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/** Arguments longer than this (UTF-16 code units) are never sent to a gate or a tool. */
export const MAX_TOOL_ARGUMENTS_CHARS = 512 * 1024;

/** What the model is shown, in its history, in place of a name it may not send back. */
export const INVALID_TOOL_NAME = 'invalid_tool_name';

export function isValidToolName(name: string): boolean {
  return TOOL_NAME_PATTERN.test(name);
}

export function argumentsTooLarge(argumentsText: string): boolean {
  return argumentsText.length > MAX_TOOL_ARGUMENTS_CHARS;
}

/** The `tool_error` text of a call that must not run, or null when it may. */
export function callRefusal(row: Pick<ToolCallRow, 'name' | 'argumentsText'>): string | null {
  if (!isValidToolName(row.name)) {
    return `the tool name ${JSON.stringify(row.name.slice(0, 80))} is not a valid tool name (it must match ${TOOL_NAME_PATTERN.source}); no tool was run`;
  }
  if (argumentsTooLarge(row.argumentsText)) {
    return `the arguments of ${row.name} are ${row.argumentsText.length} characters long; the limit is ${MAX_TOOL_ARGUMENTS_CHARS}. Nothing was run: split the work into smaller calls`;
  }
  return null;
}

/** The name as the model may see it again in its history. */
export function projectedToolName(name: string): string {
  return isValidToolName(name) ? name : INVALID_TOOL_NAME;
}

/** The arguments as the model sees them again: over the limit, a short JSON stand-in. */
export function projectedArguments(argumentsText: string): string {
  return argumentsTooLarge(argumentsText)
    ? JSON.stringify({ omitted: `${argumentsText.length} characters, over the ${MAX_TOOL_ARGUMENTS_CHARS} limit` })
    : argumentsText;
}

/**
 * The `tool_error` text of a call to a tool the round did not offer (an agent's filter, root-only
 * or sub-agent-only, hidden by an unconditional Deny, an MCP group not activated): such a call is
 * never gated nor dispatched.
 */
export function offerRefusal(name: string, offered: ReadonlySet<string>): string | null {
  return offered.has(name) ? null : `tool ${name} is not available to this agent`;
}
