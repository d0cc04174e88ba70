import type { SessionInfo, TurnOutcome } from '@skald/agent-loop';
import { type Role, topicOf } from '@skald/contracts';
import type { Bus } from '@skald/messaging/bus-port';
import type { Logger } from '@skald/service-kit';
import type { PrimedStart } from '../submit/entered-first';
import type { EventAnnouncer } from './event-announcer';
import { turnFinishedNotice, type TurnOrigin } from './turn-finished-notice';

/**
 * What the driver tells others: the echo of a message the submit's statement entered, a session's
 * doorbell, the end of a turn (the scheduler's doorbell for job sessions), and the approval
 * service's cancel of a stopped session's pending requests. A turn's own events are announced by
 * its store's commits (EventAnnouncer).
 */
export class TurnAnnouncements {
  constructor(
    private readonly bus: Bus,
    private readonly announcer: EventAnnouncer,
  ) {}

  /**
   * Announces the echo of a message the submit's statement entered (`primed.entered`), in the
   * submit's own pass, as soon as the statement returned (it committed: node-postgres answers at
   * ReadyForQuery): not written at once but queued, so that it leaves with the submit's answer in
   * one NATS write (`Bus.handle`'s `replyNow`), before the turn's set-up. The gateway sends it after
   * the `ack` in any case (WsConnection.holdingLive). `driveWith` then does not announce it again.
   */
  entered(primed: PrimedStart): void {
    if (!primed.entered || primed.announced) return;
    primed.announced = true;
    this.announcer.announce([primed.entered.event], { now: false });
  }

  /** The echo of `primed.entered` when the submit's pass did not announce it: at once. */
  enteredNow(primed: PrimedStart | null): void {
    if (primed?.entered && !primed.announced) this.announcer.announce([primed.entered.event]);
  }

  /** The session's doorbell: one worker of the group tries to drive it. */
  ring(sessionId: string, reason: 'input' | 'handover'): void {
    this.bus.publish(topicOf('sessionWake', sessionId), {
      session_id: sessionId,
      reason,
    });
  }

  /**
   * After the turn's finishing commit: the scheduler's doorbell for job sessions (it reads the
   * ending from the session's rows), and a conversation's `turn_finished` notification, handed to
   * the scheduler and not awaited (it writes it only when the user has no socket open).
   */
  turnEnded(
    session: Pick<SessionInfo, 'id' | 'userId' | 'isEphemeral'>,
    turn: TurnOrigin,
    outcome: Exclude<TurnOutcome, { kind: 'parked' }>,
    log: Logger,
  ): void {
    this.bus.publish(topicOf('sessionTurnEnded', session.id), {
      session_id: session.id,
      reason: outcome.kind,
    });
    const notice = turnFinishedNotice(session, turn, outcome);
    if (notice)
      this.bus
        .call('notify.event', notice)
        .catch((e: unknown) =>
          log.warn({ eventKey: notice.event_key, err: String(e) }, 'turn notification not handed to the scheduler'),
        );
  }

  /** Cancels the session's pending approval requests (a stopped or failed turn); a failure is logged. */
  async cancelPending(userId: string, role: Role, sessionId: string, log: Logger): Promise<void> {
    await this.bus
      .call('approval.cancel_session', {
        actor: { userId, role },
        session_id: sessionId,
        reason: 'stop',
      })
      .catch((e: unknown) => log.warn({ err: String(e) }, "could not cancel the session's pending requests"));
  }
}
