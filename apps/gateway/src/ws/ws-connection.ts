import WebSocket from 'ws';
import { ConnectionEvent, EphemeralEvent, SessionEvent, UserEvent } from '@skald/contracts';
import type { Principal } from '../auth/auth.service';

/** A socket more than this far behind is closed (1013); the client reconnects and resumes. */
export const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
const RATE_LIMIT_PER_SEC = 50;
const RATE_LIMIT_SECONDS = 5;

export type Outbound = SessionEvent | EphemeralEvent | ConnectionEvent | UserEvent;

/**
 * One client socket: who it is, which session it shows, and the replay cursor. Session events are
 * delivered in `seq` order, each at most once: live events that arrive during a replay wait in a
 * buffer, and anything at or below the cursor is dropped.
 */
export class WsConnection {
  sessionId: string | null = null;
  lastSeq = 0;
  private replaying = true;
  private held: SessionEvent[] = [];
  private windowStart = 0;
  private windowCount = 0;
  private hotSeconds = 0;
  private expiryTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly ws: WebSocket,
    readonly principal: Principal,
    readonly source: string,
  ) {}

  get userId(): string {
    return this.principal.actor.userId;
  }

  send(event: Outbound): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    if (this.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.ws.close(1013, 'client too slow; reconnect and resume');
      return;
    }
    this.ws.send(JSON.stringify(event));
  }

  /** Starts holding live session events (during a replay). */
  holdLive(): void {
    this.replaying = true;
  }

  /** Delivers a live session event of this socket's session, in order and once. */
  deliverLive(event: SessionEvent): void {
    if (event.session_id !== this.sessionId) return;
    if (this.replaying) {
      this.held.push(event);
      return;
    }
    this.deliver(event);
  }

  /** Replayed events, then whatever was held meanwhile; from then on live events flow. */
  finishReplay(replayed: SessionEvent[]): void {
    for (const e of replayed) this.deliver(e);
    const held = this.held.sort((a, b) => a.seq - b.seq);
    this.held = [];
    for (const e of held) if (e.session_id === this.sessionId) this.deliver(e);
    this.replaying = false;
  }

  private deliver(event: SessionEvent): void {
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
