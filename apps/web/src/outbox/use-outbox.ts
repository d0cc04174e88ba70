import { useCallback, useReducer, useRef } from 'react';
import type { ChatConnection, Turn } from '@skald/client';
import type { ServerFrame } from '@skald/contracts';
import { outboxReducer, type MessageFrame, type Outgoing } from './outbox';

/**
 * Messages until they enter the conversation. Sending them, and sending them again under their
 * client_message_id after a reconnect or when no `ack` came in time, is the SDK connection's
 * (`ChatConnection.message`, bounded; then the turn is `unconfirmed`); this list is what the
 * timeline shows of them: pending, failed with a manual retry (`resend`), or queued.
 */
export function useOutbox(connection: () => ChatConnection | null) {
  const [list, dispatch] = useReducer(outboxReducer, [] as Outgoing[]);
  /** The turns of the messages shown, by client_message_id, for a retry. */
  const turns = useRef(new Map<string, { turn: Turn; frame: MessageFrame }>());

  /** A server frame: acks store what waits, echoes (and discards) settle it. */
  const onFrame = useCallback((f: ServerFrame) => {
    if (f.type === 'new_session') dispatch({ type: 'left' });
    if (f.type === 'ack') {
      if (!f.client_message_id) return;
      if (!f.duplicate) dispatch({ type: 'stored', cid: f.client_message_id, messageId: f.message_id });
      else settle(f.client_message_id);
    } else if ((f.type === 'user_message' || f.type === 'message_discarded') && f.client_message_id)
      settle(f.client_message_id);
  }, []);

  function settle(cid: string): void {
    turns.current.delete(cid);
    dispatch({ type: 'acked', cid });
  }

  const follow = useCallback((cid: string, turn: Turn) => {
    turn.onStatus((s) => {
      if (s === 'unconfirmed') dispatch({ type: 'unconfirmed', cid });
    });
    void turn.end.then(
      (e) => {
        if (e.kind === 'refused') dispatch({ type: 'refused', cid, message: `${e.frame.message} (${e.frame.code})` });
      },
      () => dispatch({ type: 'unconfirmed', cid }),
    );
  }, []);

  const add = useCallback(
    (frame: MessageFrame) => {
      const cid = frame.client_message_id;
      dispatch({ type: 'add', frame });
      const conn = connection();
      if (!conn) return dispatch({ type: 'unconfirmed', cid });
      try {
        const turn = conn.message(frame.content, {
          clientMessageId: cid,
          ...(frame.attachments ? { attachments: frame.attachments } : {}),
          ...(frame.delivery ? { delivery: frame.delivery } : {}),
        });
        turns.current.set(cid, { turn, frame });
        follow(cid, turn);
      } catch {
        dispatch({ type: 'unconfirmed', cid });
      }
    },
    [connection, follow],
  );

  const retry = useCallback(
    (cid: string) => {
      const held = turns.current.get(cid);
      const conn = connection();
      if (!conn || !held) return;
      if (held.turn.status === 'unconfirmed') {
        if (conn.resend(held.turn)) dispatch({ type: 'retry', cid });
        return;
      }
      // refused (or the connection it was sent on ended): a new send under the same id
      turns.current.delete(cid);
      dispatch({ type: 'retry', cid });
      add(held.frame);
    },
    [connection, add],
  );
  return { list, add, retry, onFrame };
}
