import type { Msg, MsgHdrs, Subscription, SubscriptionOptions } from 'nats';
import { hopMark } from './hop-trace';
import { headersOf } from './safe-headers';

/** What the mux needs of a NATS connection (a `NatsConnection` has it; the unit spec fakes it). */
export interface MuxConnection {
  subscribe(subject: string, opts: SubscriptionOptions): Subscription;
  publish(subject: string, data: Uint8Array, opts: { reply: string; headers?: MsgHdrs }): void;
}

/** How a muxed request ended without a reply. */
export class MuxRequestError extends Error {
  constructor(
    readonly code: 'no_responders' | 'timeout' | 'closed' | 'publish_failed' | 'refused',
    message: string,
  ) {
    super(message);
    this.name = 'MuxRequestError';
  }
}

interface Pending {
  subject: string;
  resolve(data: Uint8Array): void;
  reject(err: MuxRequestError): void;
  timer: NodeJS.Timeout;
}

/**
 * Request / reply over one inbox subscription (`<inbox>.*`), each request waiting on its own token
 * in a map: what nats.js's own mux does, without the error object it builds for every request it
 * completes (`RequestOne.resolver` → `cancel()` → `NatsError.errorForCode(Cancelled)`) and the
 * promise race and timer promise per request.
 *
 * Each request ends exactly once: with its reply, a no-responders status (503, empty body), its
 * timeout, or the close of the subscription (drain, close). A reply that arrives after its request
 * ended (late, duplicate, unknown token) is dropped. Nothing outlives a request: its map entry and
 * timer go with it.
 */
export class ReplyMux {
  private sub: Subscription | null = null;
  private readonly pending = new Map<string, Pending>();
  private next = 0;
  private connected = true;
  /** Requests made while disconnected, by token: sent at the reconnect (see `setConnected`). */
  private readonly held = new Map<string, () => void>();

  /** @param inbox a unique inbox subject (`createInbox(prefix)`); replies come to `<inbox>.<token>`. */
  constructor(
    private readonly nc: MuxConnection,
    private readonly inbox: string,
  ) {}

  /** Requests in flight (each holds one map entry and one timer). */
  get size(): number {
    return this.pending.size;
  }

  request(subject: string, data: Uint8Array, timeoutMs: number, headers?: MsgHdrs): Promise<Uint8Array> {
    const sub = this.subscription();
    if (sub.isClosed()) return Promise.reject(new MuxRequestError('closed', `${subject}: the connection is closed`));
    const token = (this.next++).toString(36);
    return new Promise<Uint8Array>((resolve, reject) => {
      const timer = setTimeout(() => {
        const unsent = this.held.delete(token);
        if (this.pending.delete(token))
          reject(
            new MuxRequestError(
              'timeout',
              unsent
                ? `${subject} timed out: the connection to NATS was lost and not back in time`
                : `${subject} timed out`,
            ),
          );
      }, timeoutMs);
      const send = (): void => {
        try {
          hopMark('mux.request', subject);
          this.nc.publish(subject, data, { reply: `${this.inbox}.${token}`, headers });
        } catch (err) {
          this.pending.delete(token);
          clearTimeout(timer);
          reject(new MuxRequestError('publish_failed', err instanceof Error ? err.message : String(err)));
        }
      };
      this.pending.set(token, { subject, resolve, reject, timer });
      if (this.connected) send();
      else this.held.set(token, send);
    });
  }

  /**
   * Told by the connection's owner when the connection is lost (false) and back (true). What nats.js
   * is handed while it is disconnected never reaches the server (its buffer is dropped at the
   * reconnect), so a request made in the gap would wait its whole timeout for nothing: it is held
   * here and sent when the connection is back — unless its timeout ended it first. Requests sent
   * before the loss keep waiting: their reply may still come.
   */
  setConnected(connected: boolean): void {
    this.connected = connected;
    if (!connected) return;
    const held = [...this.held];
    this.held.clear();
    for (const [token, send] of held) if (this.pending.has(token)) send();
  }

  /** The inbox subscription, made at the first request (its SUB goes out before that request's PUB). */
  private subscription(): Subscription {
    if (this.sub) return this.sub;
    const prefix = `${this.inbox}.`;
    const sub = this.nc.subscribe(`${prefix}*`, {
      callback: (err, msg) => {
        if (err) return; // a subscription error ends the subscription: `closed` below rejects what waits
        this.settle(msg.subject.slice(prefix.length), msg);
      },
    });
    const closed = (): void => this.closeAll();
    sub.closed.then(closed, closed);
    this.sub = sub;
    return sub;
  }

  /**
   * The server refused a publish to `subject` (a permissions violation, reported asynchronously and
   * naming only the subject): the oldest request still waiting on that subject ends with `message`
   * at once instead of at its timeout — what nats.js's own mux does. False when none waits.
   */
  refusePublish(subject: string, message: string): boolean {
    for (const [token, p] of this.pending) {
      if (p.subject !== subject) continue;
      this.pending.delete(token);
      clearTimeout(p.timer);
      p.reject(new MuxRequestError('refused', message));
      return true;
    }
    return false;
  }

  private settle(token: string, msg: Msg): void {
    const p = this.pending.get(token);
    if (!p) return; // late (after its timeout), a duplicate, or not ours
    hopMark('mux.reply', p.subject);
    this.pending.delete(token);
    clearTimeout(p.timer);
    // NATS core reports no responders as an empty message with status 503 to the reply subject.
    if (msg.data.length === 0 && headersOf(msg)?.code === 503) {
      p.reject(new MuxRequestError('no_responders', 'no responders'));
    } else {
      p.resolve(msg.data);
    }
  }

  private closeAll(): void {
    this.held.clear();
    for (const [token, p] of this.pending) {
      this.pending.delete(token);
      clearTimeout(p.timer);
      p.reject(new MuxRequestError('closed', 'the connection closed before the reply'));
    }
  }
}
