import type { EphemeralEvent, ServerFrame, SessionEvent } from '@skald/contracts';
import { isEphemeralFrame } from '@skald/contracts/server-frame';

/** What a turn yields: the session's events from the message's echo to the turn's end, and its live deltas. */
export type TurnEvent = SessionEvent | EphemeralEvent;
type Ack = Extract<ServerFrame, { type: 'ack' }>;

type ConnectionError = Extract<ServerFrame, { type: 'error' }> & { seq?: undefined };

/**
 * How a turn ended: `done` (the final answer), `error` (the turn failed or was stopped), `refused`
 * (the gateway refused the frame: no turn ran), `discarded` (a `/stop` kept the message out, or a
 * rewind the conversation moved past), `command` (a slash command's answer).
 */
export type TurnEnd =
  | { kind: 'done'; frame: Extract<SessionEvent, { type: 'done' }> }
  | { kind: 'error'; frame: Extract<SessionEvent, { type: 'error' }> }
  | { kind: 'refused'; frame: ConnectionError }
  | { kind: 'discarded'; frame: Extract<SessionEvent, { type: 'message_discarded' }> }
  | { kind: 'command'; frame: Extract<ServerFrame, { type: 'command_result' }> };

/**
 * Where the turn's frame is: `sending` (not acknowledged yet; sent again after a reconnect or an
 * ack timeout), `unconfirmed` (sent as often as the bound allows without an ack: it waits for
 * `connection.resend(turn)`), `stored` (acknowledged), `refused` (the gateway refused it).
 */
export type TurnStatus = 'sending' | 'unconfirmed' | 'stored' | 'refused';

/** A turn's events the consumer has not read yet, at most this many (then the turn fails: it reads too slowly). */
export const TURN_BUFFER_MAX = 50_000;
/** Session events a regenerate keeps until its `ack` names the message its turn starts from. */
const BEFORE_ACK_MAX = 1000;

/**
 * What the turn answers: a `message` (its start is the `user_message` echo of its
 * `client_message_id`), a slash `command`, an `edit` of a user message (its start is the
 * `messages_superseded` from that message), or a `regenerate` (the `messages_superseded` that keeps
 * the message its `ack` names).
 */
export type TurnKind =
  { kind: 'message' } | { kind: 'command' } | { kind: 'edit'; messageId: string } | { kind: 'regenerate' };

/**
 * One message's turn, read as an async iterator: from the `user_message` echo of its
 * `client_message_id` to the root agent's `done` or the session `error` that ends it (a message a
 * `/stop` discarded ends at its `message_discarded`; a slash command at its `command_result`).
 * Frames are collected from the moment the message is sent, so none is missed however late the
 * iteration starts. One consumer reads it; `end` resolves with how it ended.
 */
export class Turn implements AsyncIterable<TurnEvent> {
  private readonly queue: TurnEvent[] = [];
  private wake: (() => void) | null = null;
  private sessionId: string | null = null;
  private finished: TurnEnd | null = null;
  private failure: Error | null = null;
  private resolveEnd!: (e: TurnEnd) => void;
  private rejectEnd!: (e: Error) => void;
  private resolveAck!: (a: Ack) => void;
  private rejectAck!: (e: Error) => void;
  /** The message is stored (`ack`). */
  readonly acked: Promise<Ack>;
  /** How the turn ended, once it has. */
  readonly end: Promise<TurnEnd>;

  private current: TurnStatus = 'sending';
  private readonly statusListeners = new Set<(s: TurnStatus) => void>();
  /** A regenerate's session events from before its ack (its start may come first). */
  private beforeAck: SessionEvent[] | null;
  /** The message a regenerate answers again (its ack's `message_id`). */
  private ackedMessageId: string | null = null;

  constructor(
    readonly clientMessageId: string,
    private readonly what: TurnKind = { kind: 'message' },
  ) {
    this.beforeAck = what.kind === 'regenerate' ? [] : null;
    this.acked = new Promise((res, rej) => {
      this.resolveAck = res;
      this.rejectAck = rej;
    });
    this.end = new Promise((res, rej) => {
      this.resolveEnd = res;
      this.rejectEnd = rej;
    });
    // Awaiting either is optional: an unread failure is not an unhandled rejection.
    this.acked.catch(() => undefined);
    this.end.catch(() => undefined);
  }

  get status(): TurnStatus {
    return this.current;
  }

  /** Each change of `status`; returns the unsubscribe. */
  onStatus(listener: (s: TurnStatus) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  /** Set by the connection as the frame is sent, acknowledged or refused. */
  setStatus(s: TurnStatus): void {
    if (s === this.current) return;
    this.current = s;
    for (const l of this.statusListeners) l(s);
  }

  get done(): boolean {
    return this.finished !== null || this.failure !== null;
  }

  /** A frame of the connection, in the order the user sees them. */
  offer(f: ServerFrame): void {
    if (this.done) return;
    if (f.type === 'ack' && f.client_message_id === this.clientMessageId) {
      this.setStatus('stored');
      this.resolveAck(f);
      if (this.beforeAck) {
        this.ackedMessageId = f.message_id;
        const held = this.beforeAck;
        this.beforeAck = null;
        for (const e of held) this.offer(e);
      }
      return;
    }
    if (f.type === 'error' && !('seq' in f) && f.client_message_id === this.clientMessageId) return this.refuse(f);
    if (f.type === 'command_result' && this.what.kind === 'command') return this.finish({ kind: 'command', frame: f });
    if (this.sessionId === null) {
      if (this.starts(f)) {
        this.sessionId = (f as SessionEvent).session_id;
        return this.push(f as SessionEvent);
      }
      if (this.beforeAck && 'seq' in f && this.beforeAck.length < BEFORE_ACK_MAX) this.beforeAck.push(f);
      if (f.type === 'turn_waiting' && f.client_message_id === this.clientMessageId) return this.push(f);
      if (f.type === 'message_discarded' && f.client_message_id === this.clientMessageId) {
        this.push(f);
        return this.finish({ kind: 'discarded', frame: f });
      }
      return;
    }
    if (isEphemeralFrame(f)) {
      if (f.session_id === this.sessionId) this.push(f);
      return;
    }
    if (!('seq' in f) || f.session_id !== this.sessionId) return;
    this.push(f);
    if (f.type === 'done') this.finish({ kind: 'done', frame: f });
    else if (f.type === 'error') this.finish({ kind: 'error', frame: f });
  }

  /** Whether `f` is the first event of this turn. */
  private starts(f: ServerFrame): boolean {
    const w = this.what;
    if (f.type === 'user_message') return w.kind !== 'regenerate' && f.client_message_id === this.clientMessageId;
    if (f.type !== 'messages_superseded') return false;
    if (w.kind === 'edit') return f.from_message_id === w.messageId && f.keeps_message !== true;
    return w.kind === 'regenerate' && f.keeps_message === true && f.from_message_id === this.ackedMessageId;
  }

  /** The gateway refused the frame (a connection `error` naming its `client_message_id`): the turn ends with it. */
  private refuse(f: ConnectionError): void {
    this.setStatus('refused');
    this.rejectAck(new Error(`refused (${f.code}): ${f.message}`));
    this.finish({ kind: 'refused', frame: f });
  }

  /** The connection ended for good: the turn's reader gets this error after what it has not read. */
  fail(e: Error): void {
    if (this.done) return;
    this.failure = e;
    this.rejectAck(e);
    this.rejectEnd(e);
    this.poke();
  }

  private push(f: TurnEvent): void {
    if (this.queue.length >= TURN_BUFFER_MAX) {
      this.fail(new Error(`the turn's reader fell ${TURN_BUFFER_MAX} events behind`));
      return;
    }
    this.queue.push(f);
    this.poke();
  }

  private finish(end: TurnEnd): void {
    this.finished = end;
    this.resolveEnd(end);
    this.poke();
  }

  private poke(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<TurnEvent, void, undefined> {
    for (;;) {
      const next = this.queue.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (this.failure) throw this.failure;
      if (this.finished) return;
      await new Promise<void>((res) => (this.wake = res));
    }
  }
}
