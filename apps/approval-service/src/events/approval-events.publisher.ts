import { Injectable } from '@nestjs/common';
import { HumanRequestState, TOPICS, UserEvent, APPROVAL_TOPICS } from '@skald/contracts';
import { Bus } from '@skald/messaging';

/**
 * Everything the approval service announces. Called only after the change it announces is
 * committed: NATS is the doorbell, the rows are the truth.
 */
@Injectable()
export class ApprovalEventsPublisher {
  constructor(private readonly bus: Bus) {}

  userEvent(userId: string, event: UserEvent): void {
    this.bus.publish(TOPICS.userEvents.subject(userId), TOPICS.userEvents.message, event);
  }

  resolved(state: HumanRequestState): void {
    this.bus.publish(TOPICS.approvalResolved.subject(state.session_id), TOPICS.approvalResolved.message, state);
  }

  wake(sessionId: string): void {
    this.bus.publish(TOPICS.sessionWake.subject(sessionId), TOPICS.sessionWake.message, {
      session_id: sessionId,
      reason: 'answer',
    });
  }

  bypassOpened(sessionId: string): void {
    this.bus.publish(APPROVAL_TOPICS.bypassOpened.subject(), APPROVAL_TOPICS.bypassOpened.message, {
      session_id: sessionId,
    });
  }

  rulesChanged(): void {
    this.bus.publish(APPROVAL_TOPICS.rulesChanged.subject(), APPROVAL_TOPICS.rulesChanged.message, {
      at: new Date().toISOString(),
    });
  }
}
