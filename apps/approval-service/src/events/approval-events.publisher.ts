import { Inject, Injectable } from '@nestjs/common';
import { HumanRequestState, ParsedRequestOf, UserEvent, topicOf } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import type { Logger } from '@skald/service-kit';
import { APPROVAL_LOGGER } from '../config';

/**
 * Everything the approval service announces. Called only after the change it announces is
 * committed: NATS is the doorbell, the rows are the truth.
 */
@Injectable()
export class ApprovalEventsPublisher {
  constructor(
    private readonly bus: Bus,
    @Inject(APPROVAL_LOGGER) private readonly log: Logger,
  ) {}

  userEvent(userId: string, event: UserEvent): void {
    this.bus.publish(topicOf('userEvents', userId), event);
  }

  /**
   * Asks the scheduler to notify the user (webhooks, e-mail), not awaited: a scheduler that is away
   * never delays the card. Idempotent on the event key, so a re-ask after a restart may ask again.
   */
  notify(event: ParsedRequestOf<'notify.event'>): void {
    this.bus
      .call('notify.event', event)
      .catch((e: unknown) =>
        this.log.warn(
          { userId: event.user_id, eventKey: event.event_key, err: e instanceof Error ? e.message : String(e) },
          'notification not handed to the scheduler',
        ),
      );
  }

  resolved(state: HumanRequestState): void {
    this.bus.publish(topicOf('approvalResolved', state.session_id), state);
  }

  wake(sessionId: string): void {
    this.bus.publish(topicOf('sessionWake', sessionId), {
      session_id: sessionId,
      reason: 'answer',
    });
  }

  bypassOpened(sessionId: string): void {
    this.bus.publish('approvalBypassOpened', {
      session_id: sessionId,
    });
  }

  rulesChanged(): void {
    this.bus.publish('approvalRulesChanged', {
      at: new Date().toISOString(),
    });
  }
}
