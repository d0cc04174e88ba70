import { Inject, Injectable, Optional } from '@nestjs/common';
import type { EphemeralEvent, EventSink } from '@skald/agent-loop';
import { EphemeralEventSchema, SessionEvent, SessionEventSchema, TOPICS } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import type { Logger } from '@skald/service-kit';
import { WORKER_LOGGER } from '../config';
import type { CommittedEvent } from '../store/pg-session-store';
import { TurnMetrics } from './turn-metrics';

/**
 * Rings the doorbell for committed session events (`events.<userId>.<sessionId>`) and carries
 * ephemeral ones. The table is the truth: a lost announcement is recovered by `resume`.
 */
@Injectable()
export class EventAnnouncer {
  constructor(
    private readonly bus: Bus,
    @Inject(WORKER_LOGGER) private readonly log: Logger,
    @Optional() private readonly metrics?: TurnMetrics,
  ) {}

  announce(events: CommittedEvent[]): void {
    for (const e of events) {
      this.count(e.event.type);
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

  /** Counted once per committed event (announced once, after its commit). */
  private count(type: string): void {
    if (!this.metrics) return;
    if (type === 'pending_write' || type === 'approval_required') this.metrics.humanWaits.inc({ kind: 'approval' });
    else if (type === 'agent_question') this.metrics.humanWaits.inc({ kind: 'clarification' });
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
