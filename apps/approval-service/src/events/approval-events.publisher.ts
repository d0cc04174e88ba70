import { Injectable } from '@nestjs/common';
import { HumanRequestState, UserEvent, topicOf } from '@skald/contracts';
import { Bus } from '@skald/messaging';

/**
 * Everything the approval service announces. Called only after the change it announces is
 * committed: NATS is the doorbell, the rows are the truth.
 */
@Injectable()
export class ApprovalEventsPublisher {
  constructor(private readonly bus: Bus) {}

  userEvent(userId: string, event: UserEvent): void {
    this.bus.publish(topicOf('userEvents', userId), event);
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
