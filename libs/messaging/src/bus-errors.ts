// The bus's two errors on their own (`@skald/messaging/bus-errors`): code that only names or throws them
// (HTTP error mapping, unit specs) does not load the NATS client and Nest with the bus.
import type { ErrorBody } from '@skald/contracts';

/** A failure of a NATS request that the caller should map to a client error. */
export class BusRequestError extends Error {
  constructor(
    readonly code: 'no_responders' | 'timeout' | 'bad_reply' | 'disconnected',
    readonly subject: string,
    message: string,
  ) {
    super(message);
    this.name = 'BusRequestError';
  }
}

/** The error a handler throws to answer a request with a typed error body. */
export class RemoteError extends Error {
  constructor(readonly body: ErrorBody) {
    super(body.message);
    this.name = 'RemoteError';
  }
}
