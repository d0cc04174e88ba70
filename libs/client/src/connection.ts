import type { Attachment, ClientFrame, Delivery, ServerFrame, SessionApprovalScope } from '@skald/contracts';
import { readServerFrame } from '@skald/contracts/server-frame';
import { SeqCursor, type Sequenced, type Verdict } from './cursor.ts';
import { SkaldApiError, SkaldConnectionError } from './errors.ts';
import { frameText, OPEN, type WebSocketConstructor, type WebSocketLike } from './transport.ts';
import { Turn, type TurnKind } from './turn.ts';

export type ConnectionState = 'connecting' | 'open' | 'closed';

/** How the socket proves who it is: a single-use ticket in the URL (browsers), or the bearer header (Node, React Native). */
export type SocketCredential = { ticket: string } | { headers: Record<string, string> };

export interface ReconnectOptions {
  /** The first wait after a drop (ms; default 500); it doubles with each failed try. */
  baseMs?: number;
  /** The longest wait between tries (ms; default 10,000). */
  maxMs?: number;
  /** Tries in a row without a `hello` before the connection gives up (default 50; `Infinity`: never). */
  maxTries?: number;
}

/**
 * How a socket that went silent is told from a quiet one (a half-open TCP connection never closes):
 * after `idleMs` without a frame the connection sends `ping`; when nothing comes within `timeoutMs`
 * after it, the socket is dropped and the connection reconnects and resumes.
 */
export interface HeartbeatOptions {
  /** Silence before a `ping` (ms; default 15,000). */
  idleMs?: number;
  /** How long a `ping` waits for any frame (ms; default 10,000). */
  timeoutMs?: number;
}

/**
 * How long a message waits for its `ack` on an open socket before it is sent again (under the same
 * `client_message_id`: the server stores it once), and how often: after `maxTries` sends without an
 * ack the turn is `unconfirmed` and waits for `resend(turn)`.
 */
export interface AckOptions {
  /** The wait after a send (ms; default 3,000), plus a backoff doubling from `backoffMs` (500) up to `maxBackoffMs` (8,000). */
  timeoutMs?: number;
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Sends on an open socket before the turn is `unconfirmed` (default 4). */
  maxTries?: number;
}

export interface ChatConnectionOptions {
  /** The WS URL for a credential (the ticket goes into it). */
  url: (credential: SocketCredential) => string;
  /** A fresh credential for each connect. */
  credential: () => Promise<SocketCredential>;
  WebSocket: WebSocketConstructor;
  /**
   * Where a session not shown yet starts (first connect, `/new`, a reopened conversation): the seq
   * the client already holds (it loaded the history page up to it), or null for the session's
   * start (every event is replayed). Events that come meanwhile wait for it, and so do the frames
   * that start turns; after `startAtTimeoutMs` (10 s) without an answer the session starts from its
   * start.
   */
  startAt?: (sessionId: string) => Promise<number | null>;
  startAtTimeoutMs?: number;
  reconnect?: ReconnectOptions;
  heartbeat?: HeartbeatOptions;
  ack?: AckOptions;
}

/** A frame that starts a turn, until the server acknowledges or refuses it. */
interface Outgoing {
  frame: Extract<ClientFrame, { client_message_id: string }>;
  turn: Turn;
  /** Sends on an open socket since it was added or last resent by hand. */
  tries: number;
  /** The wait for its ack after the last send. */
  timer: ReturnType<typeof setTimeout> | null;
}

/** The close code the SDK uses for a socket that answered no `ping`. */
const CLOSE_SILENT = 4001;

/** Resumes sent for gaps without the cursor moving before the socket is dropped and opened again. */
const MAX_GAP_RESUMES = 3;
/** Messages sent and not yet acknowledged, at most (each is sent again after a reconnect). */
const MAX_UNACKED = 256;
/** The largest frame the gateway reads (bytes of UTF-8 JSON); a larger one is refused without its id. */
export const MAX_FRAME_BYTES = 1024 * 1024;
/** The close code the SDK uses when it drops a socket that keeps missing events. */
const CLOSE_RESYNC = 4000;

/** A session event of a type this client does not know (a newer server's): not shown, but it takes its place in the stream. */
interface UnknownEvent extends Sequenced {
  type: null;
}

function unknownEvent(v: unknown): UnknownEvent | null {
  if (typeof v !== 'object' || v === null) return null;
  const { seq, session_id } = v as { seq?: unknown; session_id?: unknown };
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1 || typeof session_id !== 'string') return null;
  return { type: null, seq, session_id };
}

function newId(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  return `m-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}-${Math.random().toString(36).slice(2)}`;
}

export interface MessageOptions {
  delivery?: Delivery;
  attachments?: Attachment[];
  /** The message's id for idempotence (default: a new UUID); sending it again changes nothing. */
  clientMessageId?: string;
}

export interface ApproveOptions {
  bypass_secs?: number;
  bypass_scope?: SessionApprovalScope;
  /** Approve the call with these arguments instead (edit before approve; a refusal comes as an `error` frame). */
  arguments?: Record<string, unknown>;
}

/**
 * The chat socket of one source. A session it has not shown yet starts where `startAt` says and
 * `resume {last_seq}` replays what follows; after a reconnect it resumes after the last event it
 * delivered. Session events reach the listeners contiguous and each once: one already delivered is
 * dropped, one past a gap makes the connection resume from its cursor (and after repeated gaps it
 * reconnects). Reconnects wait longer after each failed try, up to `maxMs`, and stop after
 * `maxTries` or when the credential ended (`4401`, or the ticket refused with 401).
 */
export class ChatConnection {
  private ws: WebSocketLike | null = null;
  private readonly cursor = new SeqCursor();
  private tries = 0;
  private stopped = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** The heartbeat's timer: the next `ping` after silence, or the end of a `ping`'s wait. */
  private beat: ReturnType<typeof setTimeout> | null = null;
  /** `turn_running` frames still to come (one per connect and per resume): a replay is on its way while above 0. */
  private replays = 0;
  private gapResumes = 0;
  /** Bumped for each session start, so a start that a later one overtook delivers nothing. */
  private starts = 0;
  private readonly unacked = new Map<string, Outgoing>();
  private readonly turns = new Set<Turn>();
  private readonly frameListeners = new Set<(f: ServerFrame) => void>();
  private readonly stateListeners = new Set<(s: ConnectionState) => void>();
  private readyWaiters: Array<{ res: () => void; rej: (e: Error) => void }> = [];
  /**
   * While a session's start is being read (`startAt`), frames wait: a turn sent before it is known could end before
   * the read and its events be taken for ones the history already holds.
   */
  private beginning: Promise<void> | null = null;
  private current: ConnectionState = 'closed';
  /** Why the connection ended for good (null while it runs or reconnects). */
  closedWith: SkaldConnectionError | null = null;

  constructor(private readonly options: ChatConnectionOptions) {}

  /** Every frame the connection delivers, in order; returns the unsubscribe. */
  onFrame(listener: (f: ServerFrame) => void): () => void {
    this.frameListeners.add(listener);
    return () => this.frameListeners.delete(listener);
  }

  onState(listener: (s: ConnectionState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  get state(): ConnectionState {
    return this.current;
  }

  /** The session the connection follows (from `hello` / `new_session`). */
  get sessionId(): string | null {
    return this.cursor.sessionId;
  }

  /** The seq of the last session event delivered. */
  get lastSeq(): number {
    return this.cursor.lastSeq;
  }

  get open(): boolean {
    return this.ws?.readyState === OPEN;
  }

  start(): this {
    if (!this.stopped && this.ws === null && this.timer === null) void this.connect();
    return this;
  }

  /**
   * Resolves once the socket is open (its `hello` came) and the session's start is known; rejects if the connection
   * ends first.
   */
  async ready(): Promise<void> {
    if (this.current !== 'open') {
      if (this.closedWith) throw this.closedWith;
      await new Promise<void>((res, rej) => this.readyWaiters.push({ res, rej }));
    }
    await this.beginning;
  }

  /** Closes the socket and stops reconnecting; unfinished turns fail. */
  stop(): void {
    this.end(new SkaldConnectionError('closed', 'the connection was closed'));
  }

  /** Sends a frame as it is over the open socket; false when the socket is not open. */
  send(frame: ClientFrame): boolean {
    if (this.ws?.readyState !== OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  /**
   * Sends a chat message (or a slash command) and answers its turn. The message is kept until the
   * server acknowledges it, and sent again under the same id after each reconnect and when no ack
   * comes in time (`ack`), at most `maxTries` times before its turn is `unconfirmed`.
   */
  message(content: string, options: MessageOptions = {}): Turn {
    const id = options.clientMessageId ?? newId();
    return this.startTurn(
      {
        type: 'message',
        client_message_id: id,
        content,
        ...(options.attachments ? { attachments: options.attachments } : {}),
        ...(options.delivery ? { delivery: options.delivery } : {}),
      },
      content.startsWith('/') ? { kind: 'command' } : { kind: 'message' },
    );
  }

  /**
   * Answers the last user message of the session again (its old answer is superseded): the turn
   * starts at `messages_superseded` and ends like a message's. Refused (`conflict`) while a turn runs.
   */
  regenerate(options: { clientMessageId?: string } = {}): Turn {
    const id = options.clientMessageId ?? newId();
    return this.startTurn({ type: 'regenerate', client_message_id: id }, { kind: 'regenerate' });
  }

  /**
   * Edit-and-resend: the user message `messageId` and everything after it are superseded and
   * `content` enters instead; the turn starts at that `messages_superseded`.
   */
  edit(messageId: string, content: string, options: { clientMessageId?: string } = {}): Turn {
    const id = options.clientMessageId ?? newId();
    return this.startTurn(
      { type: 'edit', message_id: messageId, content, client_message_id: id },
      { kind: 'edit', messageId },
    );
  }

  /** Pins the LLM client of this source's conversation (`auto` clears); the server answers `client_selected`. */
  selectClient(client: string): boolean {
    return this.send({ type: 'select_client', client });
  }

  /** A frame that starts a turn: kept until acknowledged (sent again after each reconnect) or refused. */
  private startTurn(frame: Extract<ClientFrame, { client_message_id: string }>, kind: TurnKind): Turn {
    if (this.closedWith) throw this.closedWith;
    if (this.unacked.size >= MAX_UNACKED) throw new Error(`${MAX_UNACKED} messages wait for their ack already`);
    const id = frame.client_message_id;
    const turn = new Turn(id, kind);
    const bytes = new TextEncoder().encode(JSON.stringify(frame)).length;
    if (bytes > MAX_FRAME_BYTES) {
      // the gateway would refuse it unread, without naming it: refused here, never sent
      turn.offer({
        type: 'error',
        code: 'too_large',
        message: `frame exceeds ${MAX_FRAME_BYTES} bytes`,
        client_message_id: id,
      });
      return turn;
    }
    this.turns.add(turn);
    const o: Outgoing = { frame, turn, tries: 0, timer: null };
    this.unacked.set(id, o);
    if (this.current === 'open') this.transmit(o);
    return turn;
  }

  /**
   * Sends an `unconfirmed` turn's frame again, under the same id, with a fresh bound of tries; false
   * when the turn is not waiting for that (it was acknowledged, refused, or is being sent).
   */
  resend(turn: Turn): boolean {
    const o = this.unacked.get(turn.clientMessageId);
    if (!o || o.turn !== turn || turn.status !== 'unconfirmed') return false;
    o.tries = 0;
    turn.setStatus('sending');
    if (this.current === 'open') this.transmit(o);
    return true;
  }

  /** Sends a waiting frame over the open socket, and sends it again when no ack comes in time (bounded). */
  private transmit(o: Outgoing): void {
    if (o.timer) clearTimeout(o.timer);
    o.timer = null;
    const { timeoutMs = 3_000, backoffMs = 500, maxBackoffMs = 8_000, maxTries = 4 } = this.options.ack ?? {};
    if (o.turn.status !== 'sending') return;
    if (this.beginning) {
      void this.beginning.then(() => this.transmit(o));
      return;
    }
    if (o.tries >= maxTries) return o.turn.setStatus('unconfirmed');
    // a send while the socket is down does not count: the next hello sends it
    if (!this.send(o.frame)) return;
    o.tries++;
    const wait = timeoutMs + Math.min(maxBackoffMs, backoffMs * 2 ** (o.tries - 1));
    o.timer = setTimeout(() => {
      o.timer = null;
      if (this.unacked.get(o.frame.client_message_id) === o) this.transmit(o);
    }, wait);
  }

  /** The frame is acknowledged or refused: it waits no more. */
  private settle(clientMessageId: string): void {
    const o = this.unacked.get(clientMessageId);
    if (!o) return;
    if (o.timer) clearTimeout(o.timer);
    this.unacked.delete(clientMessageId);
  }

  /** `/stop`: aborts the running turn of this source's session. */
  cancel(): boolean {
    return this.send({ type: 'cancel' });
  }

  approve(requestId: string, options: ApproveOptions = {}): boolean {
    return this.send({ type: 'approve_tool', request_id: requestId, ...options });
  }

  reject(requestId: string, note?: string): boolean {
    return this.send({ type: 'reject_tool', request_id: requestId, ...(note !== undefined ? { note } : {}) });
  }

  answer(requestId: string, answer: string): boolean {
    return this.send({ type: 'answer_question', request_id: requestId, answer });
  }

  private setState(s: ConnectionState): void {
    this.current = s;
    if (s === 'open') for (const w of this.readyWaiters.splice(0)) w.res();
    for (const l of this.stateListeners) l(s);
  }

  private emit(f: ServerFrame): void {
    for (const t of this.turns) {
      t.offer(f);
      if (t.done) this.turns.delete(t);
    }
    for (const l of this.frameListeners) l(f);
  }

  private end(e: SkaldConnectionError): void {
    if (this.stopped) return;
    this.stopped = true;
    this.closedWith = e;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.stopBeat();
    for (const o of this.unacked.values()) if (o.timer) clearTimeout(o.timer);
    this.unacked.clear();
    const ws = this.ws;
    this.ws = null;
    ws?.close(1000);
    this.setState('closed');
    for (const w of this.readyWaiters.splice(0)) w.rej(e);
    for (const t of this.turns) t.fail(e);
    this.turns.clear();
  }

  private async connect(): Promise<void> {
    this.timer = null;
    if (this.stopped) return;
    this.setState('connecting');
    let credential: SocketCredential;
    try {
      credential = await this.options.credential();
    } catch (e) {
      if (e instanceof SkaldApiError && e.status === 401)
        return this.end(new SkaldConnectionError('unauthorized', `the credential was refused: ${e.message}`));
      return this.reconnectLater();
    }
    // stopped while the credential was on its way: no socket
    if (this.stopped) return;
    const headers = 'headers' in credential ? { headers: credential.headers } : undefined;
    let ws: WebSocketLike;
    try {
      ws = new this.options.WebSocket(this.options.url(credential), [], headers);
    } catch {
      return this.reconnectLater();
    }
    this.ws = ws;
    ws.onerror = () => undefined;
    ws.onopen = () => {
      if (this.ws === ws) this.armBeat(ws);
    };
    ws.onmessage = (ev) => {
      if (this.ws !== ws) return;
      this.armBeat(ws);
      this.receive(ws, ev.data);
    };
    ws.onclose = (ev) => this.closed(ws, ev.code, ev.reason);
  }

  /** The socket ended (closed, dropped, or silent): reconnect, unless the credential ended. */
  private closed(ws: WebSocketLike, code: number, reason: string): void {
    if (this.ws !== ws) return;
    this.ws = null;
    this.stopBeat();
    this.cursor.abandon();
    this.replays = 0;
    if (code === 4401)
      return this.end(new SkaldConnectionError('unauthorized', `the credential ended: ${reason || 'closed 4401'}`));
    this.setState('closed');
    this.reconnectLater();
  }

  private stopBeat(): void {
    if (this.beat) clearTimeout(this.beat);
    this.beat = null;
  }

  /** A frame came: the socket lives; after `idleMs` of silence a `ping`, and without an answer the socket is dropped. */
  private armBeat(ws: WebSocketLike): void {
    this.stopBeat();
    const { idleMs = 15_000, timeoutMs = 10_000 } = this.options.heartbeat ?? {};
    this.beat = setTimeout(() => {
      if (this.ws !== ws || ws.readyState !== OPEN) return;
      ws.send(JSON.stringify({ type: 'ping' }));
      this.beat = setTimeout(() => {
        if (this.ws !== ws) return;
        // a half-open socket may never finish a close handshake: it is given up here, not waited for
        ws.onclose = null;
        ws.onmessage = null;
        ws.close(CLOSE_SILENT, 'no answer to ping');
        this.closed(ws, CLOSE_SILENT, 'no answer to ping');
      }, timeoutMs);
    }, idleMs);
  }

  private reconnectLater(): void {
    if (this.stopped) return;
    const { baseMs = 500, maxMs = 10_000, maxTries = 50 } = this.options.reconnect ?? {};
    if (this.tries >= maxTries)
      return this.end(new SkaldConnectionError('gave_up', `no connection after ${this.tries} tries`));
    const delay = Math.min(maxMs, baseMs * 2 ** this.tries++);
    this.timer = setTimeout(() => void this.connect(), delay);
  }

  private receive(ws: WebSocketLike, data: unknown): void {
    let parsed: unknown;
    try {
      const text = frameText(data);
      if (text === null) return;
      parsed = JSON.parse(text);
    } catch {
      return;
    }
    const f = readServerFrame(parsed);
    if (!f) {
      // a frame of a newer server: nothing here knows what it says, but a session event keeps its place
      const unknown = unknownEvent(parsed);
      if (unknown) this.sequenced(ws, unknown, this.cursor.check(unknown));
      return;
    }
    if (f.type === 'hello') {
      this.tries = 0;
      this.replays = 1;
      this.gapResumes = 0;
      this.setState('open');
      this.emit(f);
      if (f.session_id !== this.cursor.sessionId || this.cursor.lastSeq === 0) this.begin(ws, f.session_id);
      else this.resume(ws);
      for (const o of this.unacked.values()) this.transmit(o);
    } else if (f.type === 'new_session') {
      // a new or reopened conversation: its start, then what follows it
      this.emit(f);
      this.begin(ws, f.session_id);
    } else if (f.type === 'turn_running') {
      this.replays = Math.max(0, this.replays - 1);
      this.emit(f);
    } else if (f.type === 'ack') {
      this.settle(f.client_message_id);
      this.emit(f);
    } else if (f.type === 'error' && !('seq' in f) && f.client_message_id !== undefined) {
      // a refused message is not sent again
      this.settle(f.client_message_id);
      this.emit(f);
    } else if ('seq' in f) this.sequenced(ws, f, this.cursor.check(f));
    else this.emit(f);
  }

  private sequenced(ws: WebSocketLike, f: ServerFrame | UnknownEvent, verdict: Verdict): void {
    switch (verdict) {
      case 'deliver':
        this.gapResumes = 0;
        if (f.type !== null) this.emit(f);
        return;
      case 'gap':
        // a replay already on its way brings it; else ask for one, and after repeated gaps start over
        if (this.replays > 0) return;
        if (++this.gapResumes > MAX_GAP_RESUMES) {
          ws.close(CLOSE_RESYNC, 'events keep missing: reconnecting');
          return;
        }
        this.resume(ws);
        return;
      case 'duplicate':
      case 'foreign':
      case 'hold':
        return;
    }
  }

  private resume(ws: WebSocketLike): void {
    if (ws.readyState !== OPEN || this.cursor.sessionId === null) return;
    ws.send(JSON.stringify({ type: 'resume', session_id: this.cursor.sessionId, last_seq: this.cursor.lastSeq }));
    this.replays++;
  }

  /** A session shown from its start: where `startAt` says, then the events after it. */
  private begin(ws: WebSocketLike, sessionId: string): void {
    const beginning = this.readStart(ws, sessionId).finally(() => {
      if (this.beginning === beginning) this.beginning = null;
    });
    this.beginning = beginning;
  }

  private async readStart(ws: WebSocketLike, sessionId: string): Promise<void> {
    const start = ++this.starts;
    this.cursor.begin(sessionId);
    let from: number | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      if (this.options.startAt)
        from = await Promise.race([
          this.options.startAt(sessionId),
          new Promise<null>((res) => (timer = setTimeout(() => res(null), this.options.startAtTimeoutMs ?? 10_000))),
        ]);
    } catch {
      from = null;
    } finally {
      clearTimeout(timer);
    }
    if (this.ws !== ws || start !== this.starts || !this.cursor.reading) return;
    const held = this.cursor.started<ServerFrame & Sequenced>(from ?? 0);
    this.resume(ws);
    for (const { event, verdict } of held) this.sequenced(ws, event, verdict);
  }
}
