/**
 * The retry budget of a turn. A turn whose commits keep failing at the same step (a value the
 * store refuses, a bug) must not be re-driven forever: after {@link MAX_COMMIT_FAILURES} failures
 * in a row the caller ends it here, in one small commit that carries none of the failing data —
 * every open call of the session ends `failed`, sub-agent frames close, the turn is `finished`
 * and an `error` event says so. A turn that had not started (its input could not enter the
 * conversation) discards that input instead, announced by `message_discarded`.
 */
import { failedRecord, mergeRecords } from './records';
import type { LoopDeps } from './ports';
import type { Mutation, SessionEventDraft } from './types';

/** Failed commits of one step in a row after which the turn is ended. */
export const MAX_COMMIT_FAILURES = 3;

/** What the user is told when a turn is ended for `reason` (what every attempt ran into). */
export function turnFailedMessage(reason: string): string {
  return `This turn was stopped: ${reason} (${MAX_COMMIT_FAILURES} attempts in a row failed at the same step). Nothing more will be retried; send a new message to go on.`;
}

export const TURN_FAILED_MESSAGE = turnFailedMessage('its progress could not be saved');

export const CALL_ENDED_BY_FAILED_TURN =
  'the turn was stopped because its progress could not be saved; this call did not finish';

export interface FailedStep {
  /** The turn (or, before it started, the inbox item) that failed. */
  turnId: string | null;
  /** The session's last committed event seq when it failed: the step it failed at. */
  lastSeq: number;
}

/** Identifies "the same step": a failure after another committed event is a new step. */
export function failureKey(step: FailedStep): string {
  return `${step.turnId ?? '-'}@${step.lastSeq}`;
}

/** The count after one more failure, given the stored key and count of the previous ones. */
export function nextFailureCount(previous: { key: string | null; count: number }, step: FailedStep): number {
  return previous.key === failureKey(step) ? previous.count + 1 : 1;
}

export interface EndFailedTurnRequest {
  sessionId: string;
  /** The inbox item that started the failing turn, when it never entered the conversation. */
  inboxId?: string;
  /** What every attempt ran into, when it was not a refused save (e.g. a broken invariant). */
  reason?: string;
}

/** Ends a turn that failed too often (see the file comment). Returns what was ended. */
export async function endFailedTurn(
  deps: LoopDeps,
  request: EndFailedTurnRequest,
): Promise<{ endedCalls: number; discarded: boolean }> {
  const { store } = deps;
  const session = await store.getSession(request.sessionId);
  const mutations: Mutation[] = [];
  const events: SessionEventDraft[] = [];
  let endedCalls = 0;
  let discarded = false;
  if (session.turnState !== 'finished') {
    const frames = await store.listActiveFrames(session.id);
    const records = [];
    for (const frame of frames) {
      for (const call of await store.listToolCalls(frame.id)) {
        if (call.status === 'pending' || call.status === 'running' || call.status === 'awaiting_human')
          records.push(failedRecord(call, CALL_ENDED_BY_FAILED_TURN));
      }
    }
    endedCalls = records.length;
    const merged = mergeRecords(records);
    mutations.push(...merged.mutations);
    events.push(...merged.events);
    // Deepest first, so a parent closes after its children.
    for (const frame of [...frames].sort((a, b) => b.depth - a.depth)) {
      if (frame.depth > 0) mutations.push({ kind: 'closeFrame', frameId: frame.id });
    }
  } else if (request.inboxId) {
    const item = (await store.listInbox(session.id)).find((i) => i.id === request.inboxId);
    if (item) {
      discarded = true;
      mutations.push({ kind: 'discardInbox', inboxId: item.id });
      events.push({ type: 'message_discarded', message_id: item.id, client_message_id: item.clientMessageId });
    }
  }
  mutations.push({ kind: 'setTurnState', sessionId: session.id, state: 'finished' });
  events.push({
    type: 'error',
    code: 'internal',
    message: request.reason ? turnFailedMessage(request.reason) : TURN_FAILED_MESSAGE,
  });
  await store.commit(session.id, mutations, events);
  return { endedCalls, discarded };
}
