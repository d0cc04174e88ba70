import type { ClientFrame } from '@skald/contracts';

export type MessageFrame = Extract<ClientFrame, { type: 'message' }>;

/**
 * A message as the timeline shows it until it enters the conversation: not acknowledged yet
 * (`pending`; the SDK's connection sends it, and again after a reconnect or an ack timeout),
 * `failed` (the SDK sent it as often as its bound allows without an ack, or the gateway refused it:
 * the user may retry it by hand), or acknowledged and not yet in the conversation (`queued`:
 * durable on the server, waiting for a turn; `messageId` is the id its chat row gets). It leaves
 * when its `user_message` shows it in the conversation (or a stop discards it).
 */
export interface Outgoing {
  frame: MessageFrame;
  state: 'pending' | 'failed' | 'queued';
  messageId?: string;
  /** Why the gateway refused it (`failed` by an `error` naming it): shown on its row. */
  refused?: string;
}

export type OutboxAction =
  | { type: 'add'; frame: MessageFrame }
  /** `ack` of a new message: stored, shown as queued until it enters the conversation. */
  | { type: 'stored'; cid: string; messageId: string }
  /** Its `user_message` or `message_discarded`, or an `ack` with `duplicate: true` (the server had it already). */
  | { type: 'acked'; cid: string }
  /** The socket follows another conversation (`new_session`): messages queued in the one left are not shown here. */
  | { type: 'left' }
  /** The SDK gave up waiting for its ack (its turn is `unconfirmed`). */
  | { type: 'unconfirmed'; cid: string }
  /** The gateway refused it (an `error` naming its client_message_id): failed with that error. */
  | { type: 'refused'; cid: string; message: string }
  /** The user retries a failed message: the same client_message_id, sent again by the SDK. */
  | { type: 'retry'; cid: string };

/** The same list (the same reference) when nothing changed, so an action that changes nothing renders nothing. */
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
        : [...list, { frame: a.frame, state: 'pending' }];
    case 'stored':
      return list.map((o) =>
        cidOf(o) === a.cid && o.state !== 'queued' ? { ...o, state: 'queued', messageId: a.messageId } : o,
      );
    case 'acked':
      return list.filter((o) => cidOf(o) !== a.cid);
    case 'left':
      return list.filter((o) => o.state !== 'queued');
    case 'unconfirmed':
      return list.map((o) => (cidOf(o) === a.cid && o.state === 'pending' ? { ...o, state: 'failed' } : o));
    case 'refused':
      return list.map((o) =>
        cidOf(o) === a.cid && o.state === 'pending' ? { ...o, state: 'failed', refused: a.message } : o,
      );
    case 'retry':
      return list.map((o) =>
        cidOf(o) === a.cid && o.state === 'failed' ? { ...o, state: 'pending', refused: undefined } : o,
      );
  }
}

/** The key of the chat's notice of a refused frame that named its `client_message_id`. */
export const refusedNoticeKey = (cid: string): string => `refused:${cid}`;

/**
 * The conversation's items as the timeline shows them next to the outbox: the notice of a refused
 * message is left out while the message's own row says it was not sent (and why), so the refusal
 * is shown once. A refused regenerate or edit has no row: its notice stays.
 */
export function timelineItems<I extends { key: string }>(items: readonly I[], list: readonly Outgoing[]): I[] {
  const told = new Set(
    list.filter((o) => o.state === 'failed').map((o) => refusedNoticeKey(o.frame.client_message_id)),
  );
  return told.size === 0 ? [...items] : items.filter((i) => !told.has(i.key));
}
