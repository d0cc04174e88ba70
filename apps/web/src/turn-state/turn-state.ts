import type { SessionEventType } from '@skald/contracts';

export type TurnSign = 'running' | 'ends' | 'neutral';

/**
 * What a session event says of its session's turn, for a client that follows the stream without
 * `turn_running` (it joined mid-turn, or missed it): `running` — only a running turn produces it;
 * `ends` — the turn ended with it (every session `error` is a turn's ending); `neutral` — neither
 * (a `/stop` of a queued message, `truncated` after `done`, a path of a call already announced, a
 * failure the ending event follows). `turn_running` stays the truth after every (re)connect.
 * Typed over the contracts' `SessionEventType` (a type import: the bundle takes no zod): a type
 * missing here does not compile; turn-state.spec.ts checks the keys against `SESSION_EVENT_TYPES`.
 */
export const SESSION_EVENT_TURN: { readonly [K in SessionEventType]: TurnSign } = {
  user_message: 'running',
  message_discarded: 'neutral',
  messages_superseded: 'running',
  thinking: 'running',
  tool_start: 'running',
  tool_done: 'running',
  tool_error: 'running',
  tool_cancelled: 'neutral',
  tool_rejected: 'running',
  pending_write: 'running',
  approval_required: 'running',
  agent_question: 'running',
  agent_start: 'running',
  agent_done: 'running',
  file_changed: 'neutral',
  open_file: 'neutral',
  model_fallback: 'running',
  llm_failed: 'neutral',
  done: 'ends',
  truncated: 'neutral',
  error: 'ends',
};

const TURN: Readonly<Partial<Record<string, TurnSign>>> = SESSION_EVENT_TURN;

/** What a frame says of the turn: a session event's sign (it carries a `seq`), else nothing. */
export function turnSign(f: { type: string; seq?: unknown }): TurnSign | undefined {
  return typeof f.seq === 'number' ? TURN[f.type] : undefined;
}
