import { Inject, Injectable, Optional } from '@nestjs/common';
import type { EphemeralEvent, EventSink, SessionEventDraft } from '@skald/agent-loop';
import { EphemeralEventSchema, SessionEvent, SessionEventSchema, TOPICS } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import type { Logger } from '@skald/service-kit';
import { WORKER_LOGGER } from '../config';
import type { CommittedEvent } from '../store/pg-session-store';
import { TurnMetrics } from './turn-metrics';

/**
 * The log line of a tool call's step (started, waiting for a human, ended): its id, tool and
 * status — never its arguments, result or the human's words. Written in the turn's log context,
 * so it names the user, session and turn too.
 */
export function toolCallLine(ev: SessionEventDraft): { fields: Record<string, string>; msg: string } | null {
  switch (ev.type) {
    case 'tool_start':
      return { fields: { toolCallId: ev.tool_call_id, tool: ev.name }, msg: 'tool call started' };
    case 'approval_required':
    case 'pending_write':
      return { fields: { toolCallId: ev.tool_call_id, requestId: ev.request_id }, msg: 'tool call awaits approval' };
    case 'agent_question':
      return { fields: { toolCallId: ev.tool_call_id, requestId: ev.request_id }, msg: 'tool call awaits an answer' };
    case 'tool_done':
      return { fields: { toolCallId: ev.tool_call_id, status: 'done' }, msg: 'tool call ended' };
    case 'tool_error':
      return { fields: { toolCallId: ev.tool_call_id, status: 'failed' }, msg: 'tool call ended' };
    case 'tool_cancelled':
      return { fields: { toolCallId: ev.tool_call_id, status: 'cancelled' }, msg: 'tool call ended' };
    case 'tool_rejected':
      return { fields: { toolCallId: ev.tool_call_id, status: 'rejected' }, msg: 'tool call ended' };
    case 'user_message':
    case 'message_discarded':
    case 'messages_superseded':
    case 'thinking':
    case 'agent_start':
    case 'agent_done':
    case 'file_changed':
    case 'open_file':
    case 'model_fallback':
    case 'llm_failed':
    case 'done':
    case 'truncated':
    case 'error':
      return null;
    default: {
      const never: never = ev;
      return never;
    }
  }
}

/**
 * Rings the doorbell for committed session events (`events.<userId>.<sessionId>`) and carries
 * ephemeral ones. The table is the truth: a lost announcement is recovered by `resume`.
 *
 * A message's echo (`user_message`) is written to NATS at once, with the events queued before it,
 * not at the end of the event loop's pass: the commit that enters the message is followed in the
 * same pass by the turn's set-up (the agent, its memory and tools), which the echo need not wait for.
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
      const line = toolCallLine(e.event);
      if (line) this.log.info(line.fields, line.msg);
      const wire = { ...e.event, session_id: e.sessionId, seq: e.seq } as SessionEvent;
      try {
        this.bus.publish(TOPICS.sessionEvents.subject(e.userId, e.sessionId), SessionEventSchema, wire, {
          now: e.event.type === 'user_message',
        });
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
