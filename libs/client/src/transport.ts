/**
 * The part of a WebSocket the SDK uses: the browser's `WebSocket`, React Native's, and the `ws`
 * package's all have it. Handlers are set as properties (`onmessage = …`), which all three support.
 */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

/**
 * A WebSocket constructor. The third argument carries the `Authorization` header for clients that
 * can send one (`ws` in Node, React Native); a browser's constructor ignores it, so browsers
 * connect with a ticket.
 */
export type WebSocketConstructor = new (
  url: string,
  protocols?: string | string[],
  options?: { headers?: Record<string, string> },
) => WebSocketLike;

/** `WebSocket.OPEN` on every platform. */
export const OPEN = 1;

/** A frame's text: a text frame as it is, a binary frame decoded as UTF-8 (null when it is neither). */
export function frameText(data: unknown): string | null {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) return new TextDecoder('utf-8', { fatal: true }).decode(data);
  if (ArrayBuffer.isView(data))
    return new TextDecoder('utf-8', { fatal: true }).decode(
      new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    );
  return null;
}

/** The WS URL of the chat socket from the gateway's HTTP origin (`https:` → `wss:`). */
export function socketUrl(base: string, source: string, ticket?: string): string {
  const ws = base.replace(/^http(s?):/i, (_, s: string) => `ws${s}:`);
  if (!/^wss?:\/\//i.test(ws)) throw new TypeError(`cannot tell the WebSocket URL from "${base}": pass wsUrl`);
  const q = new URLSearchParams({ source });
  if (ticket !== undefined) q.set('ticket', ticket);
  return `${ws.replace(/\/+$/, '')}/api/ws?${q.toString()}`;
}
