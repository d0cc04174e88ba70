/** The root's terminal write: the turn state and the terminal event, in one commit. */
import { discardInbox } from './injection';
import { exhaustedMessage, INTERRUPTED_BY_USER } from './texts';
import { commit, type FrameOutcome, type TurnContext } from './turn-context';
import type { TurnOutcome } from './types';

export async function finishTurn(turn: TurnContext, outcome: FrameOutcome): Promise<TurnOutcome> {
  const sessionId = turn.session.id;
  const finished = { kind: 'setTurnState' as const, sessionId, state: 'finished' as const };
  switch (outcome.kind) {
    case 'final':
      if (outcome.replayed) {
        await markFinished(turn);
        return { kind: 'idle' };
      }
      return {
        kind: 'final',
        messageId: outcome.messageId,
        content: outcome.content,
        reasoningContent: outcome.reasoningContent,
        inputTokens: outcome.inputTokens,
        outputTokens: outcome.outputTokens,
        truncated: outcome.truncated,
        toolCalls: turn.recorded,
      };
    case 'cancelled': {
      const discarded = await discardInbox(turn);
      await commit(
        turn,
        [...discarded.mutations, finished],
        [...discarded.events, { type: 'error', code: 'interrupted', message: INTERRUPTED_BY_USER }],
      );
      return { kind: 'cancelled' };
    }
    case 'exhausted':
      await commit(turn, [finished], [{ type: 'error', code: 'exhausted', message: exhaustedMessage(outcome.rounds) }]);
      return { kind: 'exhausted', rounds: outcome.rounds };
    case 'failed':
      await commit(
        turn,
        [finished],
        [
          outcome.code
            ? { type: 'error', code: outcome.code, message: outcome.error }
            : { type: 'error', code: 'llm_failed', message: `The model failed: ${outcome.error}` },
        ],
      );
      return { kind: 'failed', error: outcome.error, ...(outcome.code ? { code: outcome.code } : {}) };
    case 'parked':
      await commit(turn, [{ kind: 'setTurnState', sessionId, state: 'parked' }], []);
      return { kind: 'parked', toolCallId: outcome.toolCallId, requestId: outcome.requestId };
    case 'idle':
      await markFinished(turn);
      return { kind: 'idle' };
  }
}

async function markFinished(turn: TurnContext): Promise<void> {
  const current = await turn.deps.store.getSession(turn.session.id);
  if (current.turnState !== 'finished') {
    await commit(turn, [{ kind: 'setTurnState', sessionId: turn.session.id, state: 'finished' }], []);
  }
}
