import type { ChatState } from '../chat-state';
import type { Outgoing } from '../outbox/outbox';

/**
 * The notice of a message that waits for one of the user's turn slots: under the message, or on its
 * own (`alone`) when the page does not hold the message (after a reload: queued messages are not in
 * the history until they enter).
 */
export function slotNotice(limit: number | null, alone = false): string {
  const have =
    limit === null
      ? 'you already have as many conversations running at once as your account allows'
      : limit === 1
        ? 'you already have 1 conversation running (your limit)'
        : `you already have ${limit} conversations running at once (your limit)`;
  const when = limit === 1 ? 'when that one ends' : 'when one of them ends';
  return `${alone ? 'Your message is waiting to start' : 'Waiting to start'} — ${have}. It starts ${when}.`;
}

/**
 * The outbox as the timeline shows it: a queued message whose row the conversation already holds
 * (its echo came with a history page) is not shown twice. `waitingFor`: the client id of the shown
 * message that carries the slot notice — the one the server named, else the last queued one;
 * null when the notice stands alone (after a reload the waiting message is not in the outbox).
 */
export function shownOutbox(
  list: readonly Outgoing[],
  st: Pick<ChatState, 'items' | 'slot'>,
): { shown: Outgoing[]; waitingFor: string | null } {
  const rows = new Set(st.items.map((i) => i.key));
  const shown = list.filter((o) => o.state !== 'queued' || !rows.has(`user:${o.messageId ?? ''}`));
  if (!st.slot) return { shown, waitingFor: null };
  const queued = shown.filter((o) => o.state === 'queued');
  const named = queued.find((o) => o.frame.client_message_id === st.slot?.clientMessageId);
  return { shown, waitingFor: (named ?? queued.at(-1))?.frame.client_message_id ?? null };
}
