import WebSocket from 'ws';

export type Frame = { type: string; [key: string]: unknown };

export interface WsConnectOptions {
  source?: string;
  token?: string;
  ticket?: string;
  origin?: string;
}

/** The HTTP status of a refused upgrade. */
export class UpgradeRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`upgrade refused with ${status}: ${body}`);
  }
}

/** A WebSocket client for tests: records every raw frame, waits for frames by predicate. */
export class WsTestClient {
  readonly frames: Frame[] = [];
  closeCode: number | null = null;
  private waiters: Array<() => void> = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.frames.push(
        JSON.parse(
          Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8'),
        ) as Frame,
      );
      this.wake();
    });
    ws.on('close', (code) => {
      this.closeCode = code;
      this.wake();
    });
  }

  static connect(baseUrl: string, options: WsConnectOptions = {}): Promise<WsTestClient> {
    const url = new URL('/api/ws', baseUrl.replace(/^http/, 'ws'));
    url.searchParams.set('source', options.source ?? 'web');
    if (options.ticket) url.searchParams.set('ticket', options.ticket);
    const headers: Record<string, string> = {};
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.origin) headers.origin = options.origin;
    const ws = new WebSocket(url, { headers });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new WsTestClient(ws)));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => reject(new UpgradeRefused(res.statusCode ?? 0, body)));
      });
      ws.once('error', reject);
    });
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** The first recorded frame (from `from` on) matching the predicate, waiting up to `timeoutMs`. */
  async waitFor(pred: (f: Frame) => boolean, timeoutMs = 20_000, from = 0): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.slice(from).find(pred);
      if (found) return found;
      if (this.closeCode !== null)
        throw new Error(`socket closed (${this.closeCode}) before the frame arrived; got: ${this.types().join(', ')}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching frame within ${timeoutMs} ms; got: ${this.types().join(', ')}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 250));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  waitForType(type: string, timeoutMs?: number): Promise<Frame> {
    return this.waitFor((f) => f.type === type, timeoutMs);
  }

  /** Waits until the socket closes; returns the close code. */
  async closed(timeoutMs = 10_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (this.closeCode === null) {
      if (Date.now() > deadline) throw new Error('socket did not close');
      await new Promise((r) => setTimeout(r, 50));
    }
    return this.closeCode;
  }

  types(): string[] {
    return this.frames.map((f) => f.type);
  }

  close(): void {
    this.ws.close();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}
