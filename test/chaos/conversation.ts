import WebSocket from 'ws';
import { Frame, WsTestClient } from '@skald/testing';

const CONNECT_MS = 5000;
const ACK_MS = 8000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Frames that ask the user to approve a tool call. */
const APPROVAL_CARDS = new Set(['pending_write', 'approval_required']);

/**
 * One user's conversation as a client would drive it through faults: a socket to any live gateway,
 * reconnected (and resumed from the last event it holds without a gap) when it closes or stops
 * answering; approval cards approved as they arrive. Records every session event delivered, per
 * connection, for the delivery checks.
 */
export class ChaosConversation {
  sessionId = '';
  /** Events by seq, as first delivered. */
  readonly received = new Map<number, Frame>();
  /** The same seq delivered twice on one connection (never after a resume the client asked for). */
  duplicateDeliveries = 0;
  /** Deliveries of a seq whose frame differed from the one delivered before. */
  differingDeliveries = 0;
  approvalsSent = 0;
  reconnects = 0;
  private socket: WsTestClient | null = null;
  /** This connection's deliveries: seq → index of the frame that brought it. */
  private seenHere = new Map<number, number>();
  /** This connection's resumes: the cursor sent, and how many frames had arrived by then. */
  private resumes: Array<{ from: number; at: number; done?: number }> = [];
  /** `turn_running` frames on this connection (one after the connect, then one per resume). */
  private runningHere = 0;
  private framesHere = 0;
  private readonly approvals = new Map<string, { sentAt: number; resolved: boolean; tries: number }>();
  private connecting: Promise<WsTestClient> | null = null;
  private closed = false;

  constructor(
    readonly name: string,
    readonly token: string,
    readonly userId: string,
    private readonly gateways: () => string[],
    readonly source = 'chaos',
  ) {}

  /** The highest seq up to which every event has been delivered. */
  get cursor(): number {
    let c = 0;
    while (this.received.has(c + 1)) c++;
    return c;
  }

  /** A live socket (connecting, and resuming from the cursor, when there is none). */
  async connected(deadline: number): Promise<WsTestClient> {
    if (this.socket && this.socket.closeCode === null) return this.socket;
    this.connecting ??= this.connect(deadline).finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async connect(deadline: number): Promise<WsTestClient> {
    for (let attempt = 0; ; attempt++) {
      if (this.closed) throw new Error(`${this.name}: closed`);
      const urls = this.gateways();
      const url = urls[attempt % Math.max(1, urls.length)];
      try {
        if (!url) throw new Error('no live gateway');
        const pending = WsTestClient.connect(url, { token: this.token, source: this.source });
        const ws = await withTimeout(pending, CONNECT_MS).catch((e: unknown) => {
          pending.then((late) => late.ws.terminate()).catch(() => undefined);
          throw e;
        });
        const hello = await ws.waitForType('hello', CONNECT_MS).catch((e: unknown) => {
          ws.ws.terminate();
          throw e;
        });
        this.adopt(ws, hello.session_id as string);
        return ws;
      } catch (e) {
        if (Date.now() > deadline) throw new Error(`${this.name}: no gateway took the socket (${String(e)})`);
        await sleep(300);
      }
    }
  }

  private adopt(ws: WsTestClient, sessionId: string): void {
    if (this.socket) this.reconnects++;
    if (this.sessionId && sessionId !== this.sessionId)
      throw new Error(`${this.name}: session changed from ${this.sessionId} to ${sessionId}`);
    this.sessionId = sessionId;
    this.socket = ws;
    this.seenHere = new Map();
    this.resumes = [];
    this.framesHere = 0;
    this.runningHere = 0;
    ws.ws.on('message', (data: WebSocket.RawData) =>
      this.onFrame(
        ws,
        JSON.parse((Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer)).toString('utf8')) as Frame,
      ),
    );
    this.resume(ws);
  }

  /** Asks for every event after the cursor (a client's reaction to a reconnect or a gap). */
  private resume(ws: WsTestClient): void {
    const from = this.cursor;
    this.resumes.push({ from, at: this.framesHere });
    ws.send({ type: 'resume', session_id: this.sessionId, last_seq: from });
  }

  /** The socket's events: recorded; a gap makes the client resume; approval cards are approved. */
  private onFrame(ws: WsTestClient, f: Frame): void {
    if (ws !== this.socket) return;
    const n = ++this.framesHere;
    if (typeof f.seq === 'number') {
      // Twice on one connection is a duplicate unless a resume asked for it again: one sent after it
      // came, or one whose replay was still under way when it came live (the live event overtook it).
      const first = this.seenHere.get(f.seq);
      const seq = f.seq;
      const asked = (r: { from: number; at: number; done?: number }) =>
        r.from < seq && (r.at >= first! || r.done === undefined || r.done > first!);
      if (first !== undefined && !this.resumes.some(asked)) this.duplicateDeliveries++;
      this.seenHere.set(f.seq, n);
      const before = this.received.get(f.seq);
      if (before && JSON.stringify(before) !== JSON.stringify(f)) this.differingDeliveries++;
      if (!before) this.received.set(f.seq, f);
      if (f.seq > this.cursor + 1 && !this.received.has(f.seq - 1)) this.resume(ws);
    }
    if (f.type === 'turn_running') {
      // The first follows the connect; the k-th after it ends the k-th resume's replay.
      const r = this.resumes[this.runningHere++ - 1];
      if (r) r.done = n;
    }
    if (APPROVAL_CARDS.has(f.type) && typeof f.request_id === 'string') this.approve(f.request_id);
    if (f.type === 'approval_resolved' && typeof f.request_id === 'string') {
      const a = this.approvals.get(f.request_id);
      if (a) a.resolved = true;
    }
  }

  private approve(requestId: string): void {
    const a = this.approvals.get(requestId) ?? { sentAt: 0, resolved: false, tries: 0 };
    this.approvals.set(requestId, a);
    if (a.resolved || a.tries >= 20) return;
    a.tries++;
    a.sentAt = Date.now();
    this.approvalsSent++;
    this.socket?.send({ type: 'approve_tool', request_id: requestId });
  }

  /**
   * What a client does while it waits: approvals not seen resolved are sent again (their socket may
   * have died with them), and a resume from the cursor picks up events lost on the way.
   */
  async nudge(deadline: number): Promise<void> {
    const ws = await this.connected(deadline);
    for (const [id, a] of this.approvals) if (!a.resolved && Date.now() - a.sentAt > 4000) this.approve(id);
    this.resume(ws);
  }

  /**
   * Sends a message and waits for its `ack`, reconnecting and sending it again (same
   * client_message_id) until one comes or `deadline` passes. True when it was acknowledged.
   */
  async send(cmid: string, content: string, deadline: number): Promise<boolean> {
    while (Date.now() < deadline) {
      let ws: WsTestClient;
      try {
        ws = await this.connected(deadline);
      } catch {
        return false;
      }
      const from = ws.frames.length;
      ws.send({ type: 'message', client_message_id: cmid, content });
      try {
        await ws.waitFor((f) => f.type === 'ack' && f.client_message_id === cmid, ACK_MS, from);
        return true;
      } catch {
        // No ack: the gateway is gone or stopped. A new socket (to whichever gateway answers).
        ws.ws.terminate();
      }
    }
    return false;
  }

  /** A fresh socket's replay of the whole session (`resume` from 0): the events in order, up to `turn_running`. */
  async replay(url: string): Promise<Frame[]> {
    const ws = await withTimeout(WsTestClient.connect(url, { token: this.token, source: this.source }), CONNECT_MS);
    try {
      await ws.waitForType('hello', CONNECT_MS);
      const from = ws.frames.length;
      ws.send({ type: 'resume', session_id: this.sessionId, last_seq: 0 });
      const end = await ws.waitFor((f) => f.type === 'turn_running', 30_000, from);
      return ws.frames.slice(from, ws.frames.indexOf(end)).filter((f) => typeof f.seq === 'number');
    } finally {
      ws.close();
    }
  }

  close(): void {
    this.closed = true;
    this.socket?.close();
  }
}

export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
