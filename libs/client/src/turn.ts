import type { EphemeralEvent, ServerFrame, SessionEvent } from '@skald/contracts';
import { isEphemeralFrame } from '@skald/contracts/server-frame';

/** What a turn yields: the session's events from the message's echo to the turn's end, and its live deltas. */
export type TurnEvent = SessionEvent | EphemeralEvent;
type Ack = Extract<ServerFrame, { type: 'ack' }>;

/** How a turn ended: `done` (the final answer), `error` (the turn failed or was stopped), `discarded` (a `/stop` kept the message out), `command` (a slash command's answer). */
export type TurnEnd =
  | { kind: 'done'; frame: Extract<SessionEvent, { type: 'done' }> }
  | { kind: 'error'; frame: Extract<SessionEvent, { type: 'error' }> }
  | { kind: 'discarded'; frame: Extract<SessionEvent, { type: 'message_discarded' }> }
  | { kind: 'command'; frame: Extract<ServerFrame, { type: 'command_result' }> };

/** A turn's events the consumer has not read yet, at most this many (then the turn fails: it reads too slowly). */
export const TURN_BUFFER_MAX = 50_000;

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

  constructor(
    readonly clientMessageId: string,
    private readonly command: boolean,
  ) {
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

  get done(): boolean {
    return this.finished !== null || this.failure !== null;
  }

  /** A frame of the connection, in the order the user sees them. */
  offer(f: ServerFrame): void {
    if (this.done) return;
    if (f.type === 'ack' && f.client_message_id === this.clientMessageId) return this.resolveAck(f);
    if (f.type === 'command_result' && this.command) return this.finish({ kind: 'command', frame: f });
    if (this.sessionId === null) {
      if (f.type === 'user_message' && f.client_message_id === this.clientMessageId) {
        this.sessionId = f.session_id;
        return this.push(f);
      }
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
