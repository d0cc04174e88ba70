import type { EphemeralEventEnvelope, SessionEventEnvelope } from '@skald/contracts';
import { ForwardedEphemeral, ForwardedEvent } from './ws-connection';

/**
 * A live session event to forward to the sockets of `userId`, or null when its subject
 * (`events.<userId>.<sessionId>`) names another user or another session than its envelope: an
 * event reaches only the sockets of the user and session its subject names.
 */
export function forwardable(
  userId: string,
  subject: string,
  envelope: SessionEventEnvelope,
  text: string,
): ForwardedEvent | null {
  const [head, user, session, ...rest] = subject.split('.');
  if (head !== 'events' || user !== userId || session !== envelope.session_id || rest.length > 0) return null;
  return new ForwardedEvent(envelope.session_id, envelope.seq, text);
}

/** The same for a live ephemeral event on `ephemeral.<userId>.<sessionId>`. */
export function forwardableEphemeral(
  userId: string,
  subject: string,
  envelope: EphemeralEventEnvelope,
  text: string,
): ForwardedEphemeral | null {
  const [head, user, session, ...rest] = subject.split('.');
  if (head !== 'ephemeral' || user !== userId || session !== envelope.session_id || rest.length > 0) return null;
  return new ForwardedEphemeral(envelope.session_id, text);
}
