import type { FrameRow, NewMessage, userMessageEvent } from '@skald/agent-loop';
import type { CommittedEvent } from '../loop-adapters/session-store/committed-event';
import type { TurnStartRead } from '../loop-adapters/session-store/turn-start';

/** The turn's first commit made by the submit's statement: the message entered, as the loop's commit would have written it. */
export interface EnteredFirst {
  /** The root frame the message entered (opened by the statement when `opened`). */
  frame: FrameRow;
  opened: boolean;
  message: NewMessage;
  /** The echo, with the seq the statement gave it. */
  event: CommittedEvent;
}

/** The start read taken by the submit's statement: its row (TURN_START_SQL's columns) and the carried frames it did not read. */
export interface PrimedStart {
  row: TurnStartRead;
  carried: readonly string[];
  /** When the statement answered (`Date.now()`): the read is as old as that. */
  at: number;
  /** The statement also made the turn's first commit (then the driver starts the turn from it). */
  entered?: EnteredFirst | null;
  /** Its echo was already announced (TurnDriver.announceEntered): the driver does not announce it again. */
  announced?: boolean;
}

/** What the submit's statement entered, as the loop's commit would have had it (see `EnteredFirst`). */
export function enteredFirst(p: {
  userId: string;
  sessionId: string;
  agentId: string;
  frameId: string;
  opened: boolean;
  message: NewMessage;
  echo: ReturnType<typeof userMessageEvent>;
  seq: number;
}): EnteredFirst {
  const { sessionId, frameId } = p;
  return {
    frame: {
      id: frameId,
      sessionId,
      parentFrameId: null,
      parentToolCallId: null,
      agentId: p.agentId,
      depth: 0,
      status: 'active',
      clientPin: null,
    },
    opened: p.opened,
    message: { ...p.message, sessionId, frameId },
    event: { userId: p.userId, sessionId, seq: p.seq, event: p.echo },
  };
}

/**
 * A JSON value with every object's keys in the order jsonb keeps them (shorter first, then by
 * their UTF-8 bytes): what a jsonb column gives back for it.
 */
export function jsonbOrdered(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(jsonbOrdered);
  if (v === null || typeof v !== 'object') return v;
  const keys = Object.keys(v).sort((a, b) => {
    const la = Buffer.byteLength(a);
    const lb = Buffer.byteLength(b);
    return la !== lb ? la - lb : Buffer.compare(Buffer.from(a), Buffer.from(b));
  });
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    const x = (v as Record<string, unknown>)[k];
    if (x !== undefined) out[k] = jsonbOrdered(x);
  }
  return out;
}
