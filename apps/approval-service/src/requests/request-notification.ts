import type { ParsedRequestOf } from '@skald/contracts';
import type { StoredRequest } from './requests.repository';

const MAX_DETAIL = 300;

const oneLine = (s: string): string => {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_DETAIL ? `${flat.slice(0, MAX_DETAIL - 1)}…` : flat;
};

/** What the call would do, in a line: its command or path when it names one, else its arguments. */
function callDetail(r: StoredRequest): string {
  try {
    const args = JSON.parse(r.arguments) as unknown;
    if (args && typeof args === 'object' && !Array.isArray(args)) {
      const a = args as Record<string, unknown>;
      for (const key of ['command', 'path', 'file_path', 'url']) if (typeof a[key] === 'string') return oneLine(a[key]);
    }
  } catch {
    // The model's JSON was invalid: the raw text is the detail.
  }
  return oneLine(r.arguments);
}

/**
 * The notification of a pending human request (webhooks, e-mail), keyed by the request's id so a
 * re-ask after a restart, or a repeated registration, notifies once.
 */
export function requestNotification(r: StoredRequest): ParsedRequestOf<'notify.event'> {
  const refs = { session_id: r.sessionId, tool_call_id: r.toolCallId, request_id: r.id, tool_name: r.toolName };
  if (r.kind === 'clarification')
    return {
      user_id: r.userId,
      event_key: `human-request:${r.id}`,
      kind: 'question_asked',
      summary: `The agent asks: ${oneLine(r.question?.question ?? '')}`,
      refs,
    };
  return {
    user_id: r.userId,
    event_key: `human-request:${r.id}`,
    kind: 'approval_requested',
    summary: `Approval needed: ${r.toolName} ${callDetail(r)}`,
    refs,
  };
}
