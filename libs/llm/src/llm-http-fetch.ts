import http from 'node:http';
import https from 'node:https';

/** What the openai SDK reads of a response (a subset of WHATWG `Response`). */
export interface LlmHttpResponse {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly url: string;
  readonly redirected: false;
  readonly headers: Headers;
  /** The node response stream: the SDK iterates it with `for await` (it prefers an async iterator to a web stream). */
  readonly body: http.IncomingMessage;
  readonly bodyUsed: boolean;
  text(): Promise<string>;
  json(): Promise<unknown>;
  arrayBuffer(): Promise<ArrayBuffer>;
}

type FetchInput = string | URL | Request;
type Fetch = (input: FetchInput, init?: RequestInit) => Promise<Response>;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * The `fetch` given to the openai SDK: one HTTP/1.1 request on `node:http` / `node:https` with a
 * keep-alive agent of its own, answered with a minimal response whose body is the node stream.
 * Global `fetch` (undici) wraps every request and response in WHATWG objects and web streams, a
 * quarter of the worker's CPU per model call (scripts/bench/llm-call.js); the SDK needs none of it.
 *
 * What it does as `fetch` with `redirect: 'error'` does: the body the SDK built is sent as is
 * (`content-length` added); a redirect is a network error (`TypeError('fetch failed')`, the cause
 * naming the target), never followed; a failure to connect or send rejects with
 * `TypeError('fetch failed', { cause })`, like undici, so the SDK reports it as a connection
 * error; the signal aborts the request, or the body's stream once the response has started, with
 * an `AbortError`, which the SDK's stream iterator treats as the end. It differs from undici in
 * what it does not add: no `accept-encoding` (answers come uncompressed), `accept-language` or
 * `sec-fetch-mode` header. A request whose reused keep-alive connection was closed by the server
 * before any answer (`ECONNRESET` / `EPIPE` on a reused socket, the race Node's documentation
 * describes) is sent once more on a fresh connection. Bodies other than a string or bytes (the
 * SDK's file uploads) and `Request` inputs go to global `fetch`.
 */
export function createLlmHttpFetch(options: { maxSockets?: number } = {}): Fetch & { destroy(): void } {
  const agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: options.maxSockets ?? Infinity, scheduling: 'lifo' }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: options.maxSockets ?? Infinity, scheduling: 'lifo' }),
  };
  const fetchImpl = (input: FetchInput, init: RequestInit = {}): Promise<Response> => {
    const body = init.body;
    if (
      input instanceof Request ||
      !(body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array)
    )
      return globalThis.fetch(input, init);
    const url = typeof input === 'string' ? new URL(input) : input;
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return globalThis.fetch(input, init);
    return send(agents, url, init, body ?? null, true) as unknown as Promise<Response>;
  };
  return Object.assign(fetchImpl, {
    destroy(): void {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  });
}

function send(
  agents: Record<'http:' | 'https:', http.Agent>,
  url: URL,
  init: RequestInit,
  body: string | Uint8Array | null,
  mayRetry: boolean,
): Promise<LlmHttpResponse> {
  return new Promise((resolve, reject) => {
    const signal = init.signal ?? null;
    if (signal?.aborted) {
      reject(abortError(signal));
      return;
    }
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    // A string goes to the socket as UTF-8 without a copy of its own (a lone surrogate as U+FFFD, as
    // fetch's encoder does); its length is counted the same way.
    if (body !== null && headers['content-length'] === undefined)
      headers['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length);
    const protocol = url.protocol as 'http:' | 'https:';
    const req = (protocol === 'https:' ? https : http).request({
      agent: agents[protocol],
      method: (init.method ?? 'GET').toUpperCase(),
      protocol,
      hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      headers,
    });
    let res: http.IncomingMessage | null = null;
    let settled = false;
    const onAbort = (): void => {
      const err = abortError(signal as AbortSignal);
      if (res) res.destroy(err);
      req.destroy(err);
    };
    const done = (): void => signal?.removeEventListener('abort', onAbort);
    signal?.addEventListener('abort', onAbort, { once: true });
    // Errors after the answer started reach the body's reader through the stream; the listeners
    // here only keep a late one from being an uncaught exception.
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      done();
      if (signal?.aborted) reject(abortError(signal));
      else if (mayRetry && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE'))
        send(agents, url, init, body, false).then(resolve, reject);
      else reject(new TypeError('fetch failed', { cause: err }));
    });
    req.once('response', (response) => {
      settled = true;
      res = response;
      response.on('error', () => undefined);
      response.once('close', done);
      const status = response.statusCode ?? 0;
      if (REDIRECTS.has(status) && response.headers.location !== undefined) {
        response.resume();
        done();
        const cause = new Error(`redirect to ${response.headers.location} refused (HTTP ${status})`);
        reject(new TypeError('fetch failed', { cause }));
        return;
      }
      resolve(new NodeHttpResponse(response, url.href));
    });
    if (body === null) req.end();
    else if (typeof body === 'string') req.end(body, 'utf8');
    else req.end(body);
  });
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  return new DOMException('This operation was aborted', 'AbortError');
}

class NodeHttpResponse implements LlmHttpResponse {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly redirected = false as const;
  readonly headers = new Headers();
  private used = false;

  constructor(
    readonly body: http.IncomingMessage,
    readonly url: string,
  ) {
    this.status = body.statusCode ?? 0;
    this.statusText = body.statusMessage ?? '';
    this.ok = this.status >= 200 && this.status <= 299;
    const raw = body.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      try {
        this.headers.append(raw[i], raw[i + 1]);
      } catch {
        // A header WHATWG Headers refuses (Node's parser is more lenient) is left out, as undici does.
      }
    }
  }

  get bodyUsed(): boolean {
    return this.used;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = await this.bytes();
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  async text(): Promise<string> {
    return (await this.bytes()).toString('utf8');
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  private async bytes(): Promise<Buffer> {
    if (this.used) throw new TypeError('Body is unusable: Body has already been read');
    this.used = true;
    const chunks: Buffer[] = [];
    for await (const chunk of this.body) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }
}
