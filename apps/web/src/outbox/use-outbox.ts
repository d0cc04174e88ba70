import { useCallback, useEffect, useReducer, useRef } from 'react';
import type { ServerFrame } from '@skald/contracts';
import { due, outboxReducer, type MessageFrame, type Outgoing } from './outbox';

/** How often the outbox looks for what is due (the only loop; each look is bounded by the list). */
const TICK_MS = 500;

/**
 * Messages until the server has them: each is sent with its client_message_id, re-sent with the
 * same id after a reconnect or when no `ack` came in time (the server answers a repeat with
 * `duplicate: true` and stores it once), and shown as failed with a manual retry after the bound.
 */
export function useOutbox(send: (f: MessageFrame) => boolean, isOpen: () => boolean) {
  const [list, dispatch] = useReducer(outboxReducer, [] as Outgoing[]);
  const current = useRef(list);
  current.current = list;

  const flush = useCallback(() => {
    const now = Date.now();
    dispatch({ type: 'tick', now });
    if (!isOpen()) return;
    for (const f of due(current.current, now)) if (send(f)) dispatch({ type: 'sent', cid: f.client_message_id, now });
  }, [send, isOpen]);

  useEffect(() => {
    const timer = setInterval(flush, TICK_MS);
    return () => clearInterval(timer);
  }, [flush]);

  /** A server frame: acks store what waits, echoes (and discards) settle it. */
  const onFrame = useCallback((f: ServerFrame) => {
    if (f.type === 'hello') dispatch({ type: 'reconnected', now: Date.now() });
    if (f.type === 'new_session') dispatch({ type: 'left' });
    if (f.type === 'ack') {
      if (!f.client_message_id) return;
      if (!f.duplicate) dispatch({ type: 'stored', cid: f.client_message_id, messageId: f.message_id });
      else dispatch({ type: 'acked', cid: f.client_message_id });
    } else if (f.type === 'error' && !('seq' in f) && f.client_message_id)
      dispatch({ type: 'refused', cid: f.client_message_id, message: `${f.message} (${f.code})` });
    else if ((f.type === 'user_message' || f.type === 'message_discarded') && f.client_message_id)
      dispatch({ type: 'acked', cid: f.client_message_id });
  }, []);

  const add = useCallback(
    (frame: MessageFrame) => {
      const now = Date.now();
      dispatch({ type: 'add', frame, now });
      if (isOpen() && send(frame)) dispatch({ type: 'sent', cid: frame.client_message_id, now });
    },
    [send, isOpen],
  );

  const retry = useCallback((cid: string) => dispatch({ type: 'retry', cid, now: Date.now() }), []);
  return { list, add, retry, onFrame };
}
