import { Inject, Injectable } from '@nestjs/common';
import type { EphemeralEvent, EventSink } from '@skald/agent-loop';
import { EphemeralEventSchema, SessionEvent, SessionEventSchema, TOPICS } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import type { Logger } from '@skald/service-kit';
import { WORKER_LOGGER } from '../config';
import type { CommittedEvent } from '../store/pg-session-store';

/**
 * Rings the doorbell for committed session events (`events.<userId>.<sessionId>`) and carries
 * ephemeral ones. The table is the truth: a lost announcement is recovered by `resume`.
 */
@Injectable()
export class EventAnnouncer {
  constructor(
    private readonly bus: Bus,
    @Inject(WORKER_LOGGER) private readonly log: Logger,
  ) {}

  announce(events: CommittedEvent[]): void {
    for (const e of events) {
      const wire = { ...e.event, session_id: e.sessionId, seq: e.seq } as SessionEvent;
      try {
        this.bus.publish(TOPICS.sessionEvents.subject(e.userId, e.sessionId), SessionEventSchema, wire);
      } catch (err) {
        this.log.error(
          { sessionId: e.sessionId, seq: e.seq, type: e.event.type, err: String(err) },
          'event does not match its contract; not announced',
        );
      }
    }
  }

  sinkFor(userId: string): EventSink {
    return {
      ephemeral: (event: EphemeralEvent) => {
        try {
          this.bus.publish(TOPICS.ephemeralEvents.subject(userId, event.session_id), EphemeralEventSchema, event);
        } catch {
          // Ephemeral events are best effort: the final event carries the whole text.
        }
      },
    };
  }
}
