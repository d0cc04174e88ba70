import { notificationLine, type ParsedRequestOf } from '@skald/contracts';
import type { StoredRequest } from './requests.repository';

const MAX_DETAIL = 300;

const oneLine = (s: string): string => notificationLine(s, MAX_DETAIL);

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
 * re-ask after a restart, or a repeated registration, notifies once. A request of a job's session
 * (`jobRunId`) is the job's: `job_needs_human`, with the run in its refs, instead of the
 * approval's or question's own kind (one notice, never both).
 */
export function requestNotification(r: StoredRequest, jobRunId: string | null = null): ParsedRequestOf<'notify.event'> {
  const refs = { session_id: r.sessionId, tool_call_id: r.toolCallId, request_id: r.id, tool_name: r.toolName };
  if (jobRunId)
    return {
      user_id: r.userId,
      event_key: `human-request:${r.id}`,
      kind: 'job_needs_human',
      summary:
        r.kind === 'clarification'
          ? `A job's agent asks: ${oneLine(r.question?.question ?? '')}`
          : `A job needs approval: ${r.toolName} ${callDetail(r)}`,
      refs: { ...refs, run_id: jobRunId },
    };
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
