import type { SessionEventType } from './ws';

/**
 * Where the reloaded chat (`GET /{source}/messages`, which the client renders before it resumes
 * after `resume_seq`) shows what a session event announced live:
 * - `message`: the chat row named by the event's `message_id`;
 * - `tool_call`: the tool call named by its `tool_call_id`, among its message's `tool_calls`;
 * - `none`: nothing — the event is gone from the reloaded chat, for the reason given.
 * Keyed by every session event type, so a new event does not compile until it says where a reload
 * shows it; turn.e2e-spec checks the `message` and `tool_call` places against a real turn's events.
 */
export type HistoryPlace = { in: 'message' } | { in: 'tool_call' } | { in: 'none'; why: string };

const LIVE_CARD = 'a live card; the reloaded chat shows the tool call it belongs to, with its status';
const SUB_AGENT = "a sub-agent's progress; the reloaded chat shows the delegating tool call and its result";

export const SESSION_EVENT_HISTORY: { readonly [K in SessionEventType]: HistoryPlace } = {
  user_message: { in: 'message' },
  message_discarded: { in: 'none', why: 'the discarded message is left out of the reloaded chat' },
  messages_superseded: { in: 'none', why: 'the superseded rows are left out of the reloaded chat' },
  thinking: { in: 'message' },
  tool_start: { in: 'tool_call' },
  tool_done: { in: 'tool_call' },
  tool_error: { in: 'tool_call' },
  tool_cancelled: { in: 'tool_call' },
  tool_rejected: { in: 'tool_call' },
  pending_write: { in: 'none', why: LIVE_CARD },
  approval_required: { in: 'none', why: LIVE_CARD },
  agent_question: { in: 'none', why: 'a live card; the answer is the next user message' },
  agent_start: { in: 'none', why: SUB_AGENT },
  agent_done: { in: 'none', why: SUB_AGENT },
  file_changed: { in: 'none', why: 'a chip beside the tool call that wrote the file, which the reload shows' },
  open_file: { in: 'none', why: 'opens the viewer once, live' },
  model_fallback: { in: 'none', why: 'a notice about this turn only' },
  llm_failed: { in: 'none', why: 'a notice about this turn only; the failed answer is not a row' },
  done: { in: 'message' },
  truncated: { in: 'none', why: 'a notice about this turn only; the answer it cut is its row' },
  error: { in: 'none', why: 'a notice about this turn only' },
};
