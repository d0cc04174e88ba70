import type { ClientFrame } from '@skald/contracts';

export type MessageFrame = Extract<ClientFrame, { type: 'message' }>;

/**
 * A message the server has not acknowledged yet (`pending`), or given up on after the retry bound
 * (`failed`: the user may retry it by hand), or acknowledged and not yet in the conversation
 * (`queued`: durable on the server, waiting for a turn; `messageId` is the id its chat row gets).
 * It leaves the outbox when its `user_message` shows it in the conversation (or a stop discards it).
 */
export interface Outgoing {
  frame: MessageFrame;
  state: 'pending' | 'failed' | 'queued';
  messageId?: string;
  /** Why the gateway refused it (`failed` by an `error` naming it): shown on its row. */
  refused?: string;
  /** Sends so far (a send while the socket is down does not count). */
  tries: number;
  /** When it is sent (again) if no `ack` came by then (ms since the epoch). */
  nextAt: number;
}

/** The bound: `maxTries` sends, each waiting `ackTimeoutMs` plus a doubling backoff for its ack. */
export const RETRY = { maxTries: 4, ackTimeoutMs: 3_000, backoffMs: 500, maxBackoffMs: 8_000 } as const;

export function backoff(tries: number): number {
  return Math.min(RETRY.maxBackoffMs, RETRY.backoffMs * 2 ** Math.max(0, tries - 1));
}

export type OutboxAction =
  | { type: 'add'; frame: MessageFrame; now: number }
  /** It was handed to an open socket. */
  | { type: 'sent'; cid: string; now: number }
  /** `ack` of a new message: stored, shown as queued until it enters the conversation. */
  | { type: 'stored'; cid: string; messageId: string }
  /** Its `user_message` or `message_discarded`, or an `ack` with `duplicate: true` (the server had it already). */
  | { type: 'acked'; cid: string }
  /** The socket follows another conversation (`new_session`): messages queued in the one left are not shown here. */
  | { type: 'left' }
  /** The socket (re)opened: whatever waits for an ack goes again now. */
  | { type: 'reconnected'; now: number }
  /** The gateway refused it (an `error` naming its client_message_id): failed with that error, never sent again by itself. */
  | { type: 'refused'; cid: string; message: string }
  /** Past the bound without an ack: failed. */
  | { type: 'tick'; now: number }
  /** The user retries a failed message: the same client_message_id, a fresh bound. */
  | { type: 'retry'; cid: string; now: number };

/** The same list (the same reference) when nothing changed, so a periodic tick renders nothing. */
export function outboxReducer(list: Outgoing[], a: OutboxAction): Outgoing[] {
  const next = step(list, a);
  return next.length === list.length && next.every((o, i) => o === list[i]) ? list : next;
}

function step(list: readonly Outgoing[], a: OutboxAction): Outgoing[] {
  const cidOf = (o: Outgoing) => o.frame.client_message_id;
  switch (a.type) {
    case 'add':
      return list.some((o) => cidOf(o) === a.frame.client_message_id)
        ? [...list]
        : [...list, { frame: a.frame, state: 'pending', tries: 0, nextAt: a.now }];
    case 'sent':
      return list.map((o) =>
        cidOf(o) === a.cid && o.state === 'pending'
          ? { ...o, tries: o.tries + 1, nextAt: a.now + RETRY.ackTimeoutMs + backoff(o.tries + 1) }
          : o,
      );
    case 'stored':
      return list.map((o) =>
        cidOf(o) === a.cid && o.state !== 'queued' ? { ...o, state: 'queued', messageId: a.messageId } : o,
      );
    case 'acked':
      return list.filter((o) => cidOf(o) !== a.cid);
    case 'refused':
      return list.map((o) =>
        cidOf(o) === a.cid && o.state === 'pending' ? { ...o, state: 'failed', refused: a.message } : o,
      );
    case 'left':
      return list.filter((o) => o.state !== 'queued');
    case 'reconnected':
      return list.map((o) => (o.state === 'pending' && o.tries < RETRY.maxTries ? { ...o, nextAt: a.now } : o));
    case 'tick':
      return list.map((o) =>
        o.state === 'pending' && o.tries >= RETRY.maxTries && o.nextAt <= a.now ? { ...o, state: 'failed' } : o,
      );
    case 'retry':
      return list.map((o) =>
        cidOf(o) === a.cid && o.state === 'failed'
          ? { ...o, state: 'pending', tries: 0, nextAt: a.now, refused: undefined }
          : o,
      );
  }
}

/** What is due to be sent now over an open socket. */
export function due(list: readonly Outgoing[], now: number): MessageFrame[] {
  return list.filter((o) => o.state === 'pending' && o.tries < RETRY.maxTries && o.nextAt <= now).map((o) => o.frame);
}
