import type { SessionInfo, TurnOutcome } from '@skald/agent-loop';
import { notificationLine, type ParsedRequestOf } from '@skald/contracts';

const MAX_SUMMARY_TEXT = 200;

const oneLine = (s: string): string => notificationLine(s, MAX_SUMMARY_TEXT);

/**
 * The job run a session belongs to, or null for a conversation: a job's session is ephemeral and
 * named by its run (`session.job.start`).
 */
export function jobRunOf(session: Pick<SessionInfo, 'id' | 'isEphemeral'>): string | null {
  return session.isEphemeral ? session.id : null;
}

/** What started a turn: input (a message, a resumed or recovered turn), or a job's delivered result. */
export type TurnCause = 'input' | 'job_delivery';

/** The turn that ended: its id (the message or inbox item that started it) and its cause. */
export interface TurnOrigin {
  turnId: string | null | undefined;
  cause: TurnCause;
}

/**
 * The `turn_finished` event a turn's end may notify its user with, or null when there is none: a
 * job session's turn is its job's (`job_finished`, from the scheduler, never both), and so is a
 * conversation's turn that a job's delivered result started; a stopped turn was ended by a human
 * who knows; a parked or idle one did not finish. Whether the user saw it end (a socket open) the
 * scheduler asks when the event arrives. Keyed by the turn, so a repeat writes nothing new.
 */
export function turnFinishedNotice(
  session: Pick<SessionInfo, 'id' | 'userId' | 'isEphemeral'>,
  turn: TurnOrigin,
  outcome: TurnOutcome,
): ParsedRequestOf<'notify.event'> | null {
  const { turnId, cause } = turn;
  if (jobRunOf(session) !== null || !turnId) return null;
  switch (cause) {
    case 'job_delivery':
      return null;
    case 'input':
      break;
  }
  let summary: string;
  switch (outcome.kind) {
    case 'final': {
      const text = oneLine(outcome.content);
      summary = text ? `The agent finished: ${text}` : 'The agent finished its turn';
      break;
    }
    case 'exhausted':
      summary = `The agent stopped after ${outcome.rounds} rounds without a final answer`;
      break;
    case 'failed':
      summary = `The agent's turn failed: ${oneLine(outcome.error)}`;
      break;
    case 'cancelled':
    case 'parked':
    case 'idle':
      return null;
  }
  return {
    user_id: session.userId,
    event_key: `turn-finished:${turnId}`,
    kind: 'turn_finished',
    summary,
    refs: { session_id: session.id },
  };
}
