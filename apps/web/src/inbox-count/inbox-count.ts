import type { InboxDto, ServerFrame } from '@skald/contracts';

/**
 * What waits for the user across their conversations, by request id: the inbox as REST last listed
 * it, moved on by the user events that came since (`approval_requested` / `clarification_requested`
 * add one, `…_resolved` takes it away — of any conversation, not only the open one).
 */
export interface InboxCount {
  waiting: ReadonlySet<string>;
  /** Answered since the last listing: a listing read before the answer does not bring them back. */
  answered: ReadonlySet<string>;
}

export const noInbox: InboxCount = { waiting: new Set(), answered: new Set() };

/** The most answered ids remembered between two listings (every loop and list has a bound). */
const ANSWERED_KEEP = 1000;

export type InboxCountAction = { type: 'listed'; inbox: InboxDto } | ServerFrame;

export function inboxCountReducer(st: InboxCount, a: InboxCountAction): InboxCount {
  if (a.type === 'listed') {
    const ids = [...a.inbox.approvals, ...a.inbox.clarifications].map((i) => i.request_id);
    // a listing is the truth from here on: what it no longer holds stays answered; the rest is forgotten
    return {
      waiting: new Set(ids.filter((id) => !st.answered.has(id))),
      answered: new Set([...st.answered].filter((id) => ids.includes(id))),
    };
  }
  if (a.type === 'approval_requested' || a.type === 'clarification_requested') {
    if (st.waiting.has(a.request_id) || st.answered.has(a.request_id)) return st;
    return { ...st, waiting: new Set([...st.waiting, a.request_id]) };
  }
  if (a.type === 'approval_resolved' || a.type === 'clarification_resolved') {
    const waiting = new Set(st.waiting);
    waiting.delete(a.request_id);
    return { waiting, answered: new Set([...st.answered, a.request_id].slice(-ANSWERED_KEEP)) };
  }
  // every other frame says nothing about the inbox
  return st;
}

/** The number the Inbox link and the app's icon show. */
export const inboxCount = (st: InboxCount): number => st.waiting.size;
