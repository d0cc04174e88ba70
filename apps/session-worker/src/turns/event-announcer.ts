import { Inject, Injectable, Optional } from '@nestjs/common';
import type { EphemeralEvent as LoopEphemeralEvent, EventSink, SessionEventDraft } from '@skald/agent-loop';
import { BUILTIN_TOOLS, EphemeralEvent, SessionEvent, userCapWaiting, topicOf } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import type { Logger } from '@skald/service-kit';
import { WORKER_LOGGER } from '../config';
import type { CommittedEvent } from '../loop-adapters/session-store/committed-event';
import { TurnMetrics } from './turn-metrics';

/** A tool call's step as the worker logs and counts it. */
export type ToolCallStep = 'started' | 'awaits_human' | 'done' | 'failed' | 'cancelled' | 'rejected';

/**
 * The log line of a tool call's step (started, waiting for a human, ended): its id, tool and
 * status — never its arguments, result or the human's words. Written with the turn's logger
 * (`announce`'s `log`), so it names the user, session and turn too.
 */
export function toolCallLine(
  ev: SessionEventDraft,
): { step: ToolCallStep; fields: { toolCallId: string } & Record<string, string>; msg: string } | null {
  switch (ev.type) {
    case 'tool_start':
      return {
        step: 'started',
        fields: { toolCallId: ev.tool_call_id, tool: ev.name },
        msg: 'tool call started',
      };
    case 'approval_required':
    case 'pending_write':
      return {
        step: 'awaits_human',
        fields: { toolCallId: ev.tool_call_id, requestId: ev.request_id },
        msg: 'tool call awaits approval',
      };
    case 'agent_question':
      return {
        step: 'awaits_human',
        fields: { toolCallId: ev.tool_call_id, requestId: ev.request_id },
        msg: 'tool call awaits an answer',
      };
    case 'tool_done':
      return ended(ev.tool_call_id, 'done');
    case 'tool_error':
      return ended(ev.tool_call_id, 'failed');
    case 'tool_cancelled':
      return ended(ev.tool_call_id, 'cancelled');
    case 'tool_rejected':
      return ended(ev.tool_call_id, 'rejected');
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

function ended(toolCallId: string, status: 'done' | 'failed' | 'cancelled' | 'rejected') {
  return { step: status, fields: { toolCallId, status }, msg: 'tool call ended' };
}

/** Built-in tools without side effects (`access: 'read'`): their successful calls are routine. */
const READ_ONLY: ReadonlySet<string> = new Set(BUILTIN_TOOLS.filter((t) => t.access === 'read').map((t) => t.name));

/** Sessions whose last announced seq is remembered at most (a forgotten one's deltas say 0). */
export const SEQS_KEPT = 8192;

/** Routine calls (started, not yet ended) remembered at most; beyond, the oldest ends at `info`. */
export const ROUTINE_CALLS_KEPT = 4096;

/**
 * Which log level each step of a tool call gets. The routine call — a read-only built-in tool that
 * runs and succeeds, most calls of a tool loop — is logged at `debug` from start to end (a line is
 * a synchronous write; every step is counted in `skald_tool_call_steps_total`), like the tool
 * runner's and the approval service's routine lines. Any other call, and a read that waits for a
 * human, fails, is cancelled or is rejected, is at `info` from that step on; its end line then
 * names the tool, since its start line was not at `info`.
 */
export class ToolCallLogLevels {
  /** Routine calls started and not ended: id → tool. Insertion order, oldest first. */
  private readonly routine = new Map<string, string>();

  constructor(private readonly kept = ROUTINE_CALLS_KEPT) {}

  level(
    ev: SessionEventDraft,
    line: { step: ToolCallStep; fields: { toolCallId: string } & Record<string, string> },
  ): 'debug' | 'info' {
    const id = line.fields.toolCallId;
    if (line.step === 'started') {
      this.routine.delete(id);
      if (ev.type !== 'tool_start' || !READ_ONLY.has(ev.name)) return 'info';
      this.routine.set(id, ev.name);
      if (this.routine.size > this.kept) this.routine.delete(this.routine.keys().next().value as string);
      return 'debug';
    }
    const tool = this.routine.get(id);
    if (tool === undefined) return 'info';
    this.routine.delete(id);
    if (line.step === 'done') return 'debug';
    line.fields.tool = tool;
    return 'info';
  }

  /** Routine calls remembered now (for tests). */
  get size(): number {
    return this.routine.size;
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
  private readonly levels = new ToolCallLogLevels();
  /** The last seq announced per session (at most SEQS_KEPT sessions, the least recently announced go first). */
  private readonly lastSeq = new Map<string, number>();

  constructor(
    private readonly bus: Bus,
    @Inject(WORKER_LOGGER) private readonly log: Logger,
    @Optional() private readonly metrics?: TurnMetrics,
  ) {}

  /**
   * Publishes committed events. A `user_message` is written at once (`now`) unless `now: false`
   * says its writer sends it with something else (the submit's answer, see TurnDriver.announceEntered).
   * `log`: the logger of the turn that committed the events (its lines name the turn).
   */
  announce(events: CommittedEvent[], opts: { now?: boolean; log?: Logger } = {}): void {
    const log = opts.log ?? this.log;
    for (const e of events) {
      this.count(e.event.type);
      const line = toolCallLine(e.event);
      if (line) {
        this.metrics?.toolCallSteps.inc({ step: line.step });
        log[this.levels.level(e.event, line)](line.fields, line.msg);
      }
      this.announced(e.sessionId, e.seq);
      const wire = { ...e.event, session_id: e.sessionId, seq: e.seq } as SessionEvent;
      try {
        this.bus.publish(topicOf('sessionEvents', e.userId, e.sessionId), wire, {
          now: opts.now ?? e.event.type === 'user_message',
        });
      } catch (err) {
        log.error(
          { sessionId: e.sessionId, seq: e.seq, type: e.event.type, err: String(err) },
          'event does not match its contract; not announced',
        );
      }
    }
  }

  private announced(sessionId: string, seq: number): void {
    const last = this.lastSeq.get(sessionId) ?? 0;
    this.lastSeq.delete(sessionId);
    this.lastSeq.set(sessionId, Math.max(last, seq));
    if (this.lastSeq.size > SEQS_KEPT) this.lastSeq.delete(this.lastSeq.keys().next().value as string);
  }

  /** Counted once per committed event (announced once, after its commit). */
  private count(type: string): void {
    if (!this.metrics) return;
    if (type === 'pending_write' || type === 'approval_required') this.metrics.humanWaits.inc({ kind: 'approval' });
    else if (type === 'agent_question') this.metrics.humanWaits.inc({ kind: 'clarification' });
  }

  /**
   * The session's queued input `clientMessageId` is held back at the user's cap on concurrent
   * turns (`limit`): told to the session's sockets as the ephemeral `turn_waiting`, best effort
   * (after a reconnect `turn_running` says it, read from the table).
   */
  heldBack(userId: string, sessionId: string, clientMessageId: string, limit: number): void {
    const event: EphemeralEvent = {
      type: 'turn_waiting',
      session_id: sessionId,
      client_message_id: clientMessageId,
      reason: 'concurrent_turns',
      limit,
      message: userCapWaiting('concurrent_turns', limit),
    };
    try {
      this.bus.publish(topicOf('ephemeralEvents', userId, sessionId), event);
    } catch (err) {
      this.log.warn({ userId, sessionId, err: String(err) }, 'could not announce a held-back turn');
    }
  }

  sinkFor(userId: string): EventSink {
    return {
      ephemeral: (event: LoopEphemeralEvent) => {
        try {
          // A delta says which stored events its model call followed: a reader of the stored
          // events (the OpenAI-compatible endpoint) tells with it where the delta belongs.
          const wire: EphemeralEvent =
            event.type === 'token_delta' ? { ...event, after_seq: this.lastSeq.get(event.session_id) ?? 0 } : event;
          this.bus.publish(topicOf('ephemeralEvents', userId, event.session_id), wire);
        } catch {
          // Ephemeral events are best effort: the final event carries the whole text.
        }
      },
    };
  }
}
