import type { ChatHistoryRow, SessionEventsRow, StackFramesRow } from '@skald/persistence';

/**
 * The columns every INSERT of a table names, in this order, for the tables more than one statement writes (the
 * submit's statement and the store's commits): each list is written here once, checked against the generated row
 * type, and the statements spell it with `insertColumns`.
 */
export const CHAT_HISTORY_INSERT = [
  'id',
  'session_id',
  'frame_id',
  'role',
  'content',
  'reasoning',
  'is_synthetic',
  'status',
  'metadata',
  'client_message_id',
  'input_tokens',
  'output_tokens',
  'epoch',
  'created_at',
  'cost_usd',
  'tokens_estimated',
  'llm_client',
  'llm_model',
] as const satisfies readonly (keyof ChatHistoryRow)[];

export const STACK_FRAMES_INSERT = [
  'id',
  'session_id',
  'parent_frame_id',
  'parent_tool_call_id',
  'agent_id',
  'depth',
  'status',
  'client',
  'epoch',
] as const satisfies readonly (keyof StackFramesRow)[];

export const SESSION_EVENTS_INSERT = [
  'session_id',
  'seq',
  'type',
  'payload',
] as const satisfies readonly (keyof SessionEventsRow)[];

/** `(a, b, c)`: a column list for an INSERT. */
export function insertColumns(columns: readonly string[]): string {
  return `(${columns.join(', ')})`;
}
