import {
  CallNotAwaitingHumanError,
  endFailedTurn,
  LoopDeps,
  LoopInvariantError,
  MAX_COMMIT_FAILURES,
  recoverTurn,
  resolvePendingCall,
  SessionInfo,
  TurnOutcome,
} from '@skald/agent-loop';
import type { Bus } from '@skald/messaging/bus-port';
import type { Logger } from '@skald/service-kit';
import { answerOf } from '../loop-adapters';
import type { TurnStateRepository } from '../sessions/turn-state.repository';
import type { Driving } from './driving';
import type { LoopDepsBuilder } from './loop-deps';
import type { TurnAnnouncements } from './turn-announcements';
import type { Role } from '@skald/contracts';

/**
 * The turns a driver did not start: an unfinished one (its driver died or lost the lease) is
 * recovered, a parked one resumed when a human answered (or stopped by a /stop), and a turn whose
 * same step Postgres keeps refusing is ended after `MAX_COMMIT_FAILURES` tries.
 */
export class TurnRecovery {
  constructor(
    private readonly bus: Bus,
    private readonly turnState: TurnStateRepository,
    private readonly loopDeps: LoopDepsBuilder,
    private readonly announce: TurnAnnouncements,
    private readonly log: Logger,
  ) {}

  /**
   * Continues the session's `running` or `parked` turn: its outcome, or `stop` (a parked turn no
   * human answered yet: nothing to do now) or `next` (the answered call was no longer waiting).
   */
  async continueTurn(
    deps: LoopDeps,
    d: Driving,
    session: SessionInfo,
    role: Role,
    signal: AbortSignal,
    log: Logger,
  ): Promise<TurnOutcome | 'stop' | 'next'> {
    const sessionId = session.id;
    if (session.turnState === 'running') {
      log.info({}, 'recovering an unfinished turn');
      return recoverTurn(deps, { sessionId, signal });
    }
    if (d.turn.signal.aborted) {
      log.info({}, 'stopping a parked turn');
      return recoverTurn(deps, { sessionId, signal });
    }
    const answered = await this.firstAnswered(sessionId, session.userId, role, log);
    if (!answered) return 'stop';
    log.info({ toolCallId: answered.toolCallId }, 'a human answered a parked turn');
    try {
      return await resolvePendingCall(deps, {
        sessionId,
        toolCallId: answered.toolCallId,
        answer: answered.answer,
        signal,
      });
    } catch (e) {
      if (!(e instanceof CallNotAwaitingHumanError)) throw e;
      return 'next';
    }
  }

  /** The first awaiting call of a parked session whose human request has been answered. */
  private async firstAnswered(sessionId: string, userId: string, role: Role, log: Logger) {
    for (const call of await this.turnState.awaitingCalls(sessionId)) {
      if (!call.requestId) continue;
      try {
        const state = await this.bus.call('approval.get', {
          actor: { userId, role },
          request_id: call.requestId,
        });
        const answer = answerOf(state);
        if (answer) return { toolCallId: call.toolCallId, answer };
      } catch (e) {
        log.warn({ requestId: call.requestId, err: String(e) }, 'could not read a human request');
      }
    }
    return null;
  }

  /**
   * The retry budget: a step refused for what it carries (see `refusedStep`) is counted on the
   * session row, per step; the sweep drives the session again later. After `MAX_COMMIT_FAILURES`
   * in a row the turn is ended (its open calls failed, an `error` event) so that the sweep has
   * nothing left to re-drive.
   */
  async countRefusedStep(d: Driving, e: unknown, sqlState: string): Promise<void> {
    const sessionId = d.lease.sessionId;
    const failures = await this.turnState.recordCommitFailure(sessionId, d.ids.turnId ?? null);
    if (failures < MAX_COMMIT_FAILURES) {
      this.log.warn({ ...d.ids, failures, sqlState }, 'step refused; the sweep retries the turn later');
      return;
    }
    const store = this.loopDeps.store(d.lease, () => d.log);
    const session = await store.getSession(sessionId);
    const { role } = await this.turnState.turnControl(sessionId);
    const ended = await endFailedTurn(this.loopDeps.deps(store, session.userId, role, d.ids.turnId, null, d.log), {
      sessionId,
      ...(d.ids.turnId ? { inboxId: d.ids.turnId } : {}),
      ...(e instanceof LoopInvariantError ? { reason: e.message } : {}),
    });
    await this.turnState.clearCommitFailures(sessionId);
    this.log.error(
      { ...d.ids, failures, sqlState, err: e instanceof Error ? e.message : String(e), ...ended },
      'turn ended: the same step failed too many times in a row',
    );
    await this.announce.cancelPending(session.userId, role, sessionId, this.log);
    this.announce.turnEnded(
      session,
      { turnId: d.ids.turnId, cause: 'input' },
      { kind: 'failed', error: 'the same step failed too many times in a row' },
      this.log,
    );
  }
}
