import type { ServerFrame } from '@skald/contracts';
import { readServerFrame } from '@skald/contracts/server-frame';
import type { Api, Outgoing } from './api';

export type SocketState = 'connecting' | 'open' | 'closed';

/**
 * A session event of a type this client does not know (a newer server's): not shown, but it takes
 * its place in the stream, so the socket resumes after it as after any event it saw.
 */
interface UnknownEvent {
  type: null;
  seq: number;
  session_id: string;
}

function unknownEvent(v: unknown): UnknownEvent | null {
  if (typeof v !== 'object' || v === null) return null;
  const { seq, session_id } = v as { seq?: unknown; session_id?: unknown };
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1 || typeof session_id !== 'string') return null;
  return { type: null, seq, session_id };
}

/**
 * Loads a session's latest history page by REST (and hands it to the screen); answers the seq
 * the page covers — the socket resumes after it — or null when it could not (the socket then
 * replays the session's events from the start, as before history by REST).
 */
export type HistoryLoader = (sessionId: string) => Promise<number | null>;

/**
 * The chat socket of one source. A session it has not shown yet (first connect, `/new`, a
 * reopened conversation) starts from its REST history page and `resume {last_seq}` after the seq
 * that page covers; after a reconnect it resumes after the last event it saw. Session events the
 * socket delivers while the page loads wait for it; any event already seen (by `seq`) is
 * dropped, so a reload or a dropped connection loses and doubles nothing.
 */
export class ChatSocket {
  private ws: WebSocket | null = null;
  private lastSeq = 0;
  private sessionId: string | null = null;
  private retry = 0;
  private stopped = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** Session events that arrived while the history page loads (null: not loading). */
  private held: Array<ServerFrame | UnknownEvent> | null = null;

  constructor(
    private readonly api: Api,
    private readonly source: string,
    private readonly onFrame: (f: ServerFrame) => void,
    private readonly onState: (s: SocketState) => void,
    private readonly loadHistory?: HistoryLoader,
  ) {}

  start(): void {
    void this.connect();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.ws?.close();
  }

  get open(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  send(frame: Outgoing): boolean {
    if (this.ws?.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  /** Another session became active (`/new`): nothing of it has been seen yet. */
  switchTo(sessionId: string): void {
    this.sessionId = sessionId;
    this.lastSeq = 0;
  }

  /** A session shown from scratch: its history page first, then the events after it. */
  private async begin(ws: WebSocket, sessionId: string): Promise<void> {
    this.switchTo(sessionId);
    this.held = [];
    let from: number | null = null;
    try {
      from = this.loadHistory ? await this.loadHistory(sessionId) : null;
    } catch {
      from = null;
    }
    if (this.ws !== ws || this.sessionId !== sessionId) return;
    const held = this.held ?? [];
    this.held = null;
    this.lastSeq = from ?? 0;
    for (const f of held) this.deliver(f);
    ws.send(JSON.stringify({ type: 'resume', session_id: sessionId, last_seq: this.lastSeq }));
  }

  private deliver(f: ServerFrame | UnknownEvent): void {
    if ('seq' in f) {
      if (f.session_id !== this.sessionId) return;
      if (this.held) {
        this.held.push(f);
        return;
      }
      if (f.seq <= this.lastSeq) return;
      this.lastSeq = f.seq;
    }
    if (f.type !== null) this.onFrame(f);
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    this.onState('connecting');
    let ticket: string;
    try {
      ticket = await this.api.wsTicket();
    } catch {
      return this.reconnectLater();
    }
    // stopped while the ticket was on its way (the screen left): no socket
    if (this.stopped) return;
    const proto = location.protocol === 'https:' ? 'wss' : 'ws';
    const ws = new WebSocket(
      `${proto}://${location.host}/api/ws?source=${encodeURIComponent(this.source)}&ticket=${encodeURIComponent(ticket)}`,
    );
    this.ws = ws;
    ws.onmessage = (ev) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(String(ev.data));
      } catch {
        return;
      }
      const f = readServerFrame(parsed);
      if (!f) {
        // a frame of a newer server (or none at all): nothing here knows what it says
        console.warn('dropped a WS frame this client does not know', parsed);
        const unknown = unknownEvent(parsed);
        if (unknown) this.deliver(unknown);
        return;
      }
      if (f.type === 'hello') {
        this.retry = 0;
        this.onState('open');
        const sid = f.session_id;
        this.onFrame(f);
        if (sid !== this.sessionId || this.lastSeq === 0) void this.begin(ws, sid);
        else ws.send(JSON.stringify({ type: 'resume', session_id: sid, last_seq: this.lastSeq }));
        return;
      }
      if (f.type === 'new_session') {
        // a new or reopened conversation: its history page, then what follows it
        this.onFrame(f);
        void this.begin(ws, f.session_id);
        return;
      }
      this.deliver(f);
    };
    ws.onclose = () => {
      if (this.ws === ws) this.ws = null;
      this.held = null;
      this.onState('closed');
      this.reconnectLater();
    };
  }

  private reconnectLater(): void {
    if (this.stopped) return;
    const delay = Math.min(10_000, 500 * 2 ** this.retry++);
    this.timer = setTimeout(() => void this.connect(), delay);
  }
}
