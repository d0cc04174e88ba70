import type { Msg, MsgHdrs } from 'nats';

/**
 * A message's headers, or undefined when it has none or its header block does not decode. The block
 * is the publisher's bytes: nats.js decodes it on first access of `msg.headers` and throws on a key
 * it does not accept (a space, a non-token character); thrown inside a subscription's callback, that
 * ends the client's read loop and with it the connection. Headers carry only metadata here (trace
 * context, the sent-at stamp, NATS status), so a block that does not decode is read as none.
 */
export function headersOf(msg: Msg): MsgHdrs | undefined {
  try {
    return msg.headers;
  } catch {
    return undefined;
  }
}
