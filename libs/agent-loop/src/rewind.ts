/** Regenerate and edit-and-resend, carried out when their inbox item starts its turn. */
import type { InboxRewind, MessageRow } from './types';

export interface RewindPlan {
  /** The rows marked superseded, in order. */
  superseded: string[];
  /** Regenerate: the user row the turn answers again (it stays; no new row enters). */
  answerAgain: MessageRow | null;
}

/**
 * What a rewind supersedes in the root frame's live rows (`status = 'ok'`). Null when it no
 * longer applies — its message is gone, was superseded meanwhile, is not a user message, or (a
 * regenerate) is no longer the last user message: the conversation moved on since it was asked.
 */
export function planRewind(rows: readonly MessageRow[], rewind: InboxRewind): RewindPlan | null {
  const users = rows.filter((m) => m.role === 'user' && !m.isSynthetic);
  const target = users.find((m) => m.id === rewind.messageId);
  if (!target) return null;
  const at = rows.indexOf(target);
  if (rewind.kind === 'edit') return { superseded: rows.slice(at).map((m) => m.id), answerAgain: null };
  if (users.at(-1) !== target) return null;
  return { superseded: rows.slice(at + 1).map((m) => m.id), answerAgain: target };
}
