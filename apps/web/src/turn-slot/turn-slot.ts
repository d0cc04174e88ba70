import type { ChatState } from '../chat-state';
import type { Outgoing } from '../outbox/outbox';

/** The notice under a message that waits for one of the user's turn slots. */
export function slotNotice(limit: number | null): string {
  const running =
    limit === null
      ? 'you have as many conversations running at once as your account allows'
      : `you have ${limit} ${limit === 1 ? 'conversation' : 'conversations'} running at once (your limit)`;
  return `Waiting to start — ${running}. It starts when one ends.`;
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
