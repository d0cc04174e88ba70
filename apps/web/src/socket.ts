import type { Api, Outgoing } from './api';

export type Frame = { type: string; seq?: number; session_id?: string } & Record<string, unknown>;

export type SocketState = 'connecting' | 'open' | 'closed';

/**
 * The chat socket of one source: connects with a fresh ticket, replays what it missed with
 * `resume {last_seq}` after every reconnect, and drops any session event it has already seen
 * (by `seq`), so a reload or a dropped connection loses and doubles nothing.
 */
export class ChatSocket {
  private ws: WebSocket | null = null;
  private lastSeq = 0;
  private sessionId: string | null = null;
  private retry = 0;
  private stopped = false;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly api: Api,
    private readonly source: string,
    private readonly onFrame: (f: Frame) => void,
    private readonly onState: (s: SocketState) => void,
  ) {}

  start(): void {
    void this.connect();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.ws?.close();
  }

  send(frame: Outgoing): boolean {
    if (this.ws?.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  /** Another session became active (`/new`): start its replay from the beginning. */
  switchTo(sessionId: string): void {
    this.sessionId = sessionId;
    this.lastSeq = 0;
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
    const proto = location.protocol === 'https:' ? 'wss' : 'ws';
    const ws = new WebSocket(
      `${proto}://${location.host}/api/ws?source=${encodeURIComponent(this.source)}&ticket=${encodeURIComponent(ticket)}`,
    );
    this.ws = ws;
    ws.onmessage = (ev) => {
      let f: Frame;
      try {
        f = JSON.parse(String(ev.data)) as Frame;
      } catch {
        return;
      }
      if (f.type === 'hello') {
        this.retry = 0;
        this.onState('open');
        const sid = String(f.session_id);
        if (sid !== this.sessionId) this.switchTo(sid);
        ws.send(JSON.stringify({ type: 'resume', session_id: sid, last_seq: this.lastSeq }));
      } else if (f.type === 'new_session') {
        this.switchTo(String(f.session_id));
        // a reopened conversation: its history comes with the replay from the start
        ws.send(JSON.stringify({ type: 'resume', session_id: String(f.session_id), last_seq: 0 }));
      }
      if (typeof f.seq === 'number') {
        if (f.session_id && f.session_id !== this.sessionId) return;
        if (f.seq <= this.lastSeq) return;
        this.lastSeq = f.seq;
      }
      this.onFrame(f);
    };
    ws.onclose = () => {
      if (this.ws === ws) this.ws = null;
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
