import WebSocket from 'ws';
import type { ServerFrame, SessionEvent, TurnWaiting } from '@skald/contracts';
import { hopMark, hopTraceOn } from '@skald/messaging/hop-trace';
import type { Principal } from '../auth/auth.service';

/** A socket more than this far behind is closed (1013); the client reconnects and resumes. */
export const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
const RATE_LIMIT_PER_SEC = 50;
const RATE_LIMIT_SECONDS = 5;

/**
 * A live session event as it came from NATS: its place in the session and the publisher's JSON
 * text, which is the frame every socket of the session gets (checked by `Bus.subscribeForwarded`
 * and `readSessionEventEnvelope`, never parsed by a schema nor re-serialised here).
 */
export class ForwardedEvent {
  constructor(
    readonly session_id: string,
    readonly seq: number,
    readonly text: string,
  ) {}
}

/** A live ephemeral event as it came from NATS: the publisher's JSON text (no `seq`). */
export class ForwardedEphemeral {
  constructor(
    readonly session_id: string,
    readonly text: string,
  ) {}
}

/** A session event to deliver in order: a forwarded live one, or a replayed one (parsed). */
export type SequencedEvent = ForwardedEvent | SessionEvent;

/**
 * Each event's frame, serialised once however many sockets it goes to (a user's event reaches every
 * socket of that user). Keyed by the event object, which is never changed after it is first sent
 * (events come parsed from NATS or from a replay page; other frames are built per send). A
 * forwarded event's frame is its text.
 */
const frames = new WeakMap<ServerFrame, string>();
export function frameOf(event: ServerFrame | ForwardedEvent | ForwardedEphemeral): string {
  if (event instanceof ForwardedEvent || event instanceof ForwardedEphemeral) return event.text;
  let text = frames.get(event);
  if (text === undefined) {
    text = JSON.stringify(event);
    frames.set(event, text);
  }
  return text;
}

/** One page of a session's stored events (the `session.replay` answer). */
export interface ReplayPage {
  events: SessionEvent[];
  last_seq: number;
  running: boolean;
  waiting?: TurnWaiting;
  limit?: number;
  has_more?: boolean;
}

/** Reads stored events of a session after a seq (`undefined`: none, only the state). */
export type ReplaySource = (sessionId: string, afterSeq: number | undefined) => Promise<ReplayPage>;

/** How a catch-up after a gap in the bus connection retries while no session worker answers yet. */
export interface GapRetry {
  /** Reads tried in all (at least 1). */
  attempts: number;
  /** Wait between two reads. */
  waitMs: number;
}

/**
 * One client socket: who it is, which session it shows, and the replay cursor. Session events are
 * delivered in `seq` order, each once and none skipped: a live event past a gap waits while the
 * missing ones are read from the events table; live events that arrive during a replay or a
 * catch-up wait in a buffer; anything at or below the cursor is dropped. A replay pages through
 * any number of events; its `turn_running` follows the events it summarises and precedes the
 * later ones. A `resume` the server refuses (another user's or an unknown session) changes
 * nothing: the socket follows the session it followed.
 */
export class WsConnection {
  sessionId: string | null = null;
  lastSeq = 0;
  /** Replays and catch-ups in progress or queued; live events are held meanwhile. */
  private busy = 0;
  private held: SequencedEvent[] = [];
  /** Sessions a resume is about to show (by number of such resumes): their live events are held too. */
  private readonly joining = new Map<string, number>();
  private chain: Promise<void> = Promise.resolve();
  private windowStart = 0;
  private windowCount = 0;
  private hotSeconds = 0;
  private expiryTimer: NodeJS.Timeout | null = null;
  /** The socket is corked until the end of this pass of the event loop (see `coalesce`). */
  private corked = false;

  constructor(
    readonly ws: WebSocket,
    readonly principal: Principal,
    readonly source: string,
    private readonly replay: ReplaySource,
  ) {}

  get userId(): string {
    return this.principal.actor.userId;
  }

  /** Sends a frame the `ServerFrame` union names, or a forwarded event's text. */
  send(event: ServerFrame | ForwardedEvent | ForwardedEphemeral): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    if (this.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.ws.close(1013, 'client too slow; reconnect and resume');
      return;
    }
    this.coalesce();
    if (hopTraceOn)
      hopMark(
        'ws.send',
        event instanceof ForwardedEvent
          ? `seq:${event.seq}`
          : event instanceof ForwardedEphemeral
            ? 'ephemeral'
            : event.type,
      );
    this.ws.send(frameOf(event));
  }

  /**
   * The frames sent in one pass of the event loop (the events of one commit arrive from NATS in one
   * read) leave in one write: the socket is corked at the first and uncorked once the pass ends.
   * A write is a system call, ~20 µs on the VMs this runs on — it was a third of the gateway's CPU.
   * `ws` keeps its TCP socket in `_socket`; without one that can cork, frames go out one by one.
   */
  private coalesce(): void {
    if (this.corked) return;
    const socket = (this.ws as unknown as { _socket?: { cork?: () => void; uncork?: () => void } })._socket;
    if (typeof socket?.cork !== 'function' || typeof socket.uncork !== 'function') return;
    socket.cork();
    this.corked = true;
    setImmediate(() => {
      this.corked = false;
      hopMark('ws.uncork');
      socket.uncork?.();
    });
  }

  /**
   * Runs `fn` (a message's submit and its `ack`) with this socket's live session events held: one
   * that arrives meanwhile — the message's own echo, which the worker may announce as soon as the
   * message is stored, in the same NATS read as the submit's answer — is sent after `fn`, in seq
   * order. A client sees a message's `ack` before its `user_message`.
   */
  async holdingLive<T>(fn: () => Promise<T>): Promise<T> {
    this.busy++;
    try {
      return await fn();
    } finally {
      this.busy--;
      this.flushHeld();
    }
  }

  /** Delivers a live session event of this socket's session, in order, once, with no gap. */
  deliverLive(event: SequencedEvent): void {
    if (this.joining.has(event.session_id)) {
      // Its resume has not read the session yet (busy): held, and kept only if the resume succeeds.
      this.held.push(event);
      return;
    }
    if (event.session_id !== this.sessionId || event.seq <= this.lastSeq) return;
    if (this.busy > 0) {
      hopMark('ws.held', event.seq);
      this.held.push(event);
      return;
    }
    if (event.seq === this.lastSeq + 1) {
      this.deliver(event);
      return;
    }
    this.held.push(event);
    void this.serially(() => this.catchUp());
  }

  /**
   * Shows `sessionId` from `afterSeq` on: replays the stored events after it (all of them, page by
   * page; none when undefined), calls `before` (e.g. `hello`) once the first page is in, sends
   * `turn_running` as of the last replayed event, then the live events that came meanwhile. The
   * socket moves to `sessionId` only once its first page is read: a refused read (`not_found`)
   * rejects and leaves the socket as it was.
   */
  resume(sessionId: string, afterSeq: number | undefined, before?: () => void): Promise<void> {
    this.busy++;
    this.joining.set(sessionId, (this.joining.get(sessionId) ?? 0) + 1);
    let joined = false;
    const join = (): void => {
      if (joined) return;
      joined = true;
      const n = this.joining.get(sessionId) ?? 1;
      if (n <= 1) this.joining.delete(sessionId);
      else this.joining.set(sessionId, n - 1);
    };
    return this.serially(async () => {
      const first = await this.replay(sessionId, afterSeq);
      join();
      if (sessionId !== this.sessionId) {
        this.sessionId = sessionId;
        this.lastSeq = 0;
      }
      if (afterSeq !== undefined) this.lastSeq = afterSeq;
      before?.();
      const last = await this.pages(sessionId, afterSeq, first);
      if (afterSeq === undefined) this.lastSeq = Math.max(this.lastSeq, last.last_seq);
      this.sendTurnRunning(last);
    }).finally(() => {
      join();
      this.busy--;
      this.flushHeld();
    });
  }

  /**
   * After a gap in the bus connection (core NATS drops what is published meanwhile, and a turn's
   * last event has no later one to reveal the loss): replays the followed session's stored events
   * after the cursor, then sends `turn_running`. Live events that come meanwhile wait. While no
   * session worker answers yet (they reconnect too) the read is tried again, `retry.attempts` in
   * all; when every try fails the socket is closed (1011) and the client resumes.
   */
  catchUpAfterGap(retry: GapRetry): Promise<void> {
    const sessionId = this.sessionId;
    if (sessionId === null) return Promise.resolve();
    this.busy++;
    return this.serially(async () => {
      for (let attempt = 1; this.sessionId === sessionId; attempt++) {
        try {
          const last = await this.pages(sessionId, this.lastSeq);
          if (this.sessionId === sessionId) this.sendTurnRunning(last);
          return;
        } catch {
          if (attempt >= retry.attempts) {
            this.held = [];
            this.ws.close(1011, 'could not read missed events; reconnect and resume');
            return;
          }
          await new Promise((r) => setTimeout(r, retry.waitMs));
        }
      }
    }).finally(() => {
      this.busy--;
      this.flushHeld();
    });
  }

  private sendTurnRunning(page: ReplayPage): void {
    this.send({
      type: 'turn_running',
      running: page.running,
      ...(page.waiting ? { waiting: page.waiting } : {}),
      ...(page.limit !== undefined ? { limit: page.limit } : {}),
    });
  }

  /** Follows another session of the source from its current end on (`new_session`). */
  switchTo(sessionId: string): Promise<void> {
    this.busy++;
    this.sessionId = sessionId;
    this.lastSeq = 0;
    this.held = this.held.filter((e) => this.joining.has(e.session_id));
    this.send({ type: 'new_session', session_id: sessionId });
    return this.serially(async () => {
      const head = await this.replay(sessionId, undefined);
      if (this.sessionId === sessionId) this.lastSeq = Math.max(this.lastSeq, head.last_seq);
    }).finally(() => {
      this.busy--;
      this.flushHeld();
    });
  }

  /**
   * Reads pages after the cursor until the last one (starting with `first` when it is already
   * read); every replayed event is delivered.
   */
  private async pages(sessionId: string, afterSeq: number | undefined, first?: ReplayPage): Promise<ReplayPage> {
    let cursor = afterSeq;
    let page = first ?? (await this.replay(sessionId, cursor));
    for (;;) {
      if (this.sessionId !== sessionId) return page;
      for (const e of page.events) if (e.seq > this.lastSeq) this.deliver(e);
      if (!page.has_more) return page;
      // Every page moves the cursor forward, so the loop ends; a page that does not is refused.
      if (cursor !== undefined && page.last_seq <= cursor) throw new Error('event replay made no progress');
      cursor = page.last_seq;
      page = await this.replay(sessionId, cursor);
    }
  }

  /** Reads the events missing before the held ones from the events table. */
  private async catchUp(): Promise<void> {
    const sessionId = this.sessionId;
    const own = this.held.filter((e) => e.session_id === sessionId);
    if (sessionId === null || own.length === 0) return;
    const wanted = Math.min(...own.map((e) => e.seq)) - 1;
    if (wanted <= this.lastSeq) return;
    this.busy++;
    try {
      await this.pages(sessionId, this.lastSeq, undefined);
      if (this.sessionId === sessionId && this.lastSeq < wanted) throw new Error('missed events not found');
    } catch {
      // Skipping the gap would lose events silently: the client reconnects and resumes instead.
      this.held = [];
      this.ws.close(1011, 'could not read missed events; reconnect and resume');
    } finally {
      this.busy--;
    }
    this.flushHeld();
  }

  /** Held events in seq order; a gap before one of them starts a catch-up. */
  private flushHeld(): void {
    if (this.busy > 0) return;
    const held = this.held.filter((e) => e.session_id === this.sessionId).sort((a, b) => a.seq - b.seq);
    this.held = [];
    for (const [i, e] of held.entries()) {
      if (e.seq <= this.lastSeq) continue;
      if (e.seq !== this.lastSeq + 1) {
        this.held = held.slice(i);
        void this.serially(() => this.catchUp());
        return;
      }
      this.deliver(e);
    }
  }

  /** Replays and catch-ups run one at a time, in the order asked. */
  private serially(op: () => Promise<void>): Promise<void> {
    const run = this.chain.then(op);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private deliver(event: SequencedEvent): void {
    if (event.seq <= this.lastSeq) return;
    this.lastSeq = event.seq;
    this.send(event);
  }

  /** Counts an inbound frame; false when the client has sent over 50 a second for 5 seconds. */
  countFrame(now = Date.now()): boolean {
    const second = Math.floor(now / 1000);
    if (second !== this.windowStart) {
      if (second === this.windowStart + 1 && this.windowCount > RATE_LIMIT_PER_SEC) this.hotSeconds++;
      else if (this.windowCount <= RATE_LIMIT_PER_SEC || second !== this.windowStart + 1) this.hotSeconds = 0;
      this.windowStart = second;
      this.windowCount = 0;
    }
    this.windowCount++;
    return !(this.windowCount > RATE_LIMIT_PER_SEC && this.hotSeconds >= RATE_LIMIT_SECONDS - 1);
  }

  /** Closes the socket with 4401 when its credential expires. */
  armExpiry(): void {
    const at = this.principal.expiresAt;
    if (!at) return;
    const ms = Math.min(at.getTime() - Date.now(), 2_147_000_000);
    this.expiryTimer = setTimeout(() => this.ws.close(4401, 'token expired'), Math.max(0, ms));
    this.expiryTimer.unref();
  }

  dispose(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
  }
}
