/** A frame's round loop: rounds until a final answer, a stop, a park, or `maxToolRounds`. */
import { runRound } from './round';
import type { FrameContext, FrameOutcome } from './turn-context';

export async function runFrame(fctx: FrameContext): Promise<FrameOutcome> {
  const max = fctx.turn.deps.config.maxToolRounds;
  for (let round = 0; round < max; round++) {
    const result = await runRound(fctx);
    switch (result.kind) {
      case 'again':
        continue;
      case 'final':
        return result.outcome;
      case 'cancelled':
        return { kind: 'cancelled' };
      case 'failed':
        return { kind: 'failed', error: result.error, ...(result.code ? { code: result.code } : {}) };
      case 'parked':
        return { kind: 'parked', toolCallId: result.toolCallId, requestId: result.requestId };
    }
  }
  return { kind: 'exhausted', rounds: max };
}
