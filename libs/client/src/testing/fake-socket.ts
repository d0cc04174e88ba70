import type { WebSocketLike } from '../transport.ts';

/** A WebSocket the spec plays the server of: it opens, sends frames and drops the connection by hand. */
export class FakeSocket implements WebSocketLike {
  static made: FakeSocket[] = [];
  readyState = 0;
  readonly sent: Array<Record<string, unknown>> = [];
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  closedWith: number | null = null;

  constructor(
    readonly url: string,
    readonly protocols?: string | string[],
    readonly options?: { headers?: Record<string, string> },
  ) {
    FakeSocket.made.push(this);
  }

  static last(): FakeSocket {
    const s = FakeSocket.made.at(-1);
    if (!s) throw new Error('no socket was made');
    return s;
  }

  send(data: string): void {
    if (this.readyState !== 1) throw new Error('send on a socket that is not open');
    this.sent.push(JSON.parse(data) as Record<string, unknown>);
  }

  /** The client closes it. */
  close(code = 1000, reason = ''): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.closedWith = code;
    this.onclose?.({ code, reason });
  }

  /** The server side: the upgrade is done. */
  accept(): void {
    this.readyState = 1;
    this.onopen?.({});
  }

  /** The server sends a frame (raw text, or an object as JSON). */
  frame(f: unknown): void {
    this.onmessage?.({ data: typeof f === 'string' ? f : JSON.stringify(f) });
  }

  /** The server or the network ends the connection. */
  drop(code = 1006, reason = ''): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }

  /** Frames the client sent of one type. */
  sentOf(type: string): Array<Record<string, unknown>> {
    return this.sent.filter((f) => f.type === type);
  }
}
