import type { HumanDecision } from '@skald/contracts';
import type { StoredRequest } from './requests.repository';

/**
 * Who answered a request, when, where, the session approval it opened, the note of a rejection and
 * whether the call was edited; none for a cancelled one.
 */
export function decisionOf(r: StoredRequest): { decision?: HumanDecision } {
  if (r.status !== 'approved' && r.status !== 'rejected') return {};
  if (r.actorUserId === null || r.resolvedAt === null) return {};
  return {
    decision: {
      by_user_id: r.actorUserId,
      at: r.resolvedAt.toISOString(),
      ...(r.channel !== null ? { channel: r.channel } : {}),
      ...(r.bypass !== null ? { bypass: r.bypass } : {}),
      ...(r.status === 'rejected' && r.note ? { note: r.note } : {}),
      ...(r.status === 'approved' && r.editedArguments !== null ? { edited: true as const } : {}),
    },
  };
}
