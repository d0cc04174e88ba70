import { expect } from '@jest/globals';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { getEventListeners } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import * as fc from 'fast-check';
import OpenAI from 'openai';
import { createLlmHttpFetch } from './llm-http-fetch';
import { LLM_FETCH_OPTIONS } from './llm-manager';
import { streamChat } from './llm-stream-chat';
import type { LlmClientDefinition } from './llm-client-config';

/** What a server saw of one request. */
interface Seen {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A loopback server that records requests and answers each with `answer`. */
async function server(answer: (req: IncomingMessage, res: ServerResponse, body: Buffer, n: number) => void) {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const srv: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: { ...req.headers }, body });
      answer(req, res, body, seen.length);
    });
  });
  srv.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return {
    url,
    seen,
    sockets,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => srv.close(() => r()));
    },
  };
}

const sse = (chunks: unknown[]): string =>
  chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';

function answerText(content: string, toolArgs: string): string {
  const base = { id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm' };
  return sse([
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content } }] },
    {
      ...base,
      choices: [
        {
          index: 0,
          delta: {
            tool_calls: [
              { index: 0, id: 'call_1', type: 'function', function: { name: 'read_file', arguments: toolArgs } },
            ],
          },
        },
      ],
    },
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
    { ...base, choices: [], usage: { prompt_tokens: 7, completion_tokens: 3 } },
  ]);
}

const client = (url: string): LlmClientDefinition =>
  ({
    name: 'c',
    baseUrl: `${url}/v1`,
    model: 'm',
    apiKey: 'sk-test',
    strength: 'medium',
    scopes: [],
    priority: 1,
    extraParams: {},
    cacheControl: false,
    headers: {},
    timeoutMs: 10_000,
    idleTimeoutMs: 10_000,
    pricing: null,
  }) as unknown as LlmClientDefinition;

const sdk = (url: string, fetch?: ReturnType<typeof createLlmHttpFetch>) =>
  new OpenAI({
    baseURL: `${url}/v1`,
    apiKey: 'sk-test',
    organization: null,
    project: null,
    maxRetries: 0,
    ...(fetch ? { fetch } : {}),
    fetchOptions: LLM_FETCH_OPTIONS,
  });

/** Headers undici adds of its own that this fetch does not (documented), and per-connection ones. */
const UNDICI_ONLY = [
  'accept-encoding',
  'accept-language',
  'sec-fetch-mode',
  'connection',
  'x-stainless-os',
  'x-stainless-arch',
];

function comparableHeaders(h: Seen['headers']): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(h)) if (!UNDICI_ONLY.includes(k)) out[k] = v;
  return out;
}

// Text the model and the user may send: quotes, backslashes, control characters, multi-byte and
// astral characters, lone surrogates (the SDK's JSON escapes them), whitespace runs.
const hostileText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('"\\\u0000\u001f\n\r\t', '\ud800', 'x\udfffy', '😀'.repeat(30), ' '.repeat(200), '</script>'),
);

describe('createLlmHttpFetch', () => {
  it('sends the model the same request as global fetch: method, path, body bytes, headers (seeded)', async () => {
    const srv = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(answerText('ok', '{}'));
    });
    const mine = createLlmHttpFetch();
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ role: fc.constantFrom('user', 'assistant', 'system'), content: hostileText }), {
            minLength: 1,
            maxLength: 6,
          }),
          fc.option(fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), hostileText, { maxKeys: 3 })),
          async (messages, extra) => {
            const def = { ...client(srv.url), extraParams: extra ?? {} } as LlmClientDefinition;
            const before = srv.seen.length;
            const a = await streamChat(sdk(srv.url), def, { messages: messages });
            const b = await streamChat(sdk(srv.url, mine), def, { messages: messages });
            const [viaUndici, viaMine] = srv.seen.slice(before);
            expect(viaMine.body.equals(viaUndici.body)).toBe(true);
            expect(viaMine.method).toBe(viaUndici.method);
            expect(viaMine.url).toBe(viaUndici.url);
            expect(comparableHeaders(viaMine.headers)).toEqual(comparableHeaders(viaUndici.headers));
            expect(b).toEqual(a);
          },
        ),
        { seed: 19_11, numRuns: 60 },
      );
    } finally {
      mine.destroy();
      await srv.close();
    }
  });

  it('sends a string body as fetch encodes it, lone surrogates as U+FFFD, with its byte length (seeded)', async () => {
    const srv = await server((_req, res) => res.end('ok'));
    const mine = createLlmHttpFetch();
    try {
      await fc.assert(
        fc.asyncProperty(hostileText, async (text) => {
          const before = srv.seen.length;
          await (await globalThis.fetch(`${srv.url}/t`, { method: 'POST', body: text })).text();
          await (await mine(`${srv.url}/t`, { method: 'POST', body: text })).text();
          const [a, b] = srv.seen.slice(before);
          expect(b.body.equals(a.body)).toBe(true);
          expect(b.headers['content-length']).toBe(String(a.body.length));
        }),
        { seed: 7, numRuns: 100 },
      );
    } finally {
      mine.destroy();
      await srv.close();
    }
  });

  it('reads the same answer as global fetch whatever the network splits it into (seeded)', async () => {
    let plan: number[] = [];
    let text = '';
    const srv = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const bytes = Buffer.from(text);
      // Each piece its own write after a pause: the client reads the stream in these pieces, cut
      // anywhere (inside a UTF-8 character, an event, a line ending).
      let at = 0;
      const next = (i: number): void => {
        if (at >= bytes.length) {
          res.end();
          return;
        }
        const n = Math.max(1, plan[i % plan.length]);
        res.write(bytes.subarray(at, at + n));
        at += n;
        setTimeout(() => next(i + 1), 0);
      };
      next(0);
    });
    const mine = createLlmHttpFetch();
    try {
      await fc.assert(
        fc.asyncProperty(
          hostileText,
          hostileText,
          fc.array(fc.integer({ min: 1, max: 97 }), { minLength: 1, maxLength: 6 }),
          async (content, args, pieces) => {
            plan = pieces;
            text = answerText(content, args);
            const a = await streamChat(sdk(srv.url), client(srv.url), { messages: [{ role: 'user', content: 'q' }] });
            const b = await streamChat(sdk(srv.url, mine), client(srv.url), {
              messages: [{ role: 'user', content: 'q' }],
            });
            expect(b).toEqual(a);
            expect(b.toolCalls[0]?.argumentsText).toBe(JSON.parse(JSON.stringify(args)));
          },
        ),
        { seed: 2026, numRuns: 40 },
      );
    } finally {
      mine.destroy();
      await srv.close();
    }
  });

  it('sends a request once more on a fresh connection when the server closed the reused one first', async () => {
    const srv = await server((req, res, _body, n) => {
      // The second request arrives on the kept-alive connection: the server drops it unanswered.
      if (n === 2) {
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ n }));
    });
    const mine = createLlmHttpFetch();
    try {
      const first = await mine(`${srv.url}/a`, { method: 'POST', body: 'x' });
      expect(await first.json()).toEqual({ n: 1 });
      const second = await mine(`${srv.url}/b`, { method: 'POST', body: 'y' });
      expect(await second.json()).toEqual({ n: 3 });
      expect(srv.seen.map((s) => s.url)).toEqual(['/a', '/b', '/b']);
    } finally {
      mine.destroy();
      await srv.close();
    }
  });

  it('fails as fetch does on a fresh connection dropped unanswered, and on an unreachable server', async () => {
    const srv = await server((req) => req.socket.destroy());
    const mine = createLlmHttpFetch();
    try {
      await expect(mine(`${srv.url}/a`, { method: 'POST', body: 'x' })).rejects.toMatchObject({
        name: 'TypeError',
        message: 'fetch failed',
      });
      expect(srv.seen).toHaveLength(1);
      await srv.close();
      await expect(mine(`${srv.url}/a`, { method: 'POST', body: 'x' })).rejects.toMatchObject({
        name: 'TypeError',
        message: 'fetch failed',
        cause: expect.objectContaining({ code: 'ECONNREFUSED' }),
      });
    } finally {
      mine.destroy();
    }
  });

  it('never follows a redirect: a network error naming the target, the body sent once', async () => {
    for (const status of [301, 302, 303, 307, 308]) {
      const srv = await server((_req, res) =>
        res.writeHead(status, { location: 'http://127.0.0.1:9/elsewhere' }).end(),
      );
      const mine = createLlmHttpFetch();
      try {
        const err = await mine(`${srv.url}/v1/x`, { method: 'POST', body: 'b' }).catch((e: unknown) => e);
        expect(err).toMatchObject({ name: 'TypeError', message: 'fetch failed' });
        expect(String((err as { cause: Error }).cause.message)).toContain('http://127.0.0.1:9/elsewhere');
        expect(srv.seen).toHaveLength(1);
      } finally {
        mine.destroy();
        await srv.close();
      }
    }
  });

  it('an abort before or during the answer rejects or ends the body with an AbortError, and lets go of the signal', async () => {
    const srv = await server((req, res) => {
      if (req.url === '/slow-head') return; // never answers
      if (req.url === '/json') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {}\n\n'); // then nothing more
    });
    const mine = createLlmHttpFetch();
    try {
      const early = new AbortController();
      const pending = mine(`${srv.url}/slow-head`, { method: 'POST', body: 'x', signal: early.signal });
      setTimeout(() => early.abort(), 20);
      await expect(pending).rejects.toMatchObject({ name: 'AbortError' });

      const late = new AbortController();
      const res = (await mine(`${srv.url}/body`, { method: 'POST', body: 'x', signal: late.signal })) as unknown as {
        body: AsyncIterable<Buffer>;
      };
      const it = res.body[Symbol.asyncIterator]();
      expect(String((await it.next()).value)).toBe('data: {}\n\n');
      late.abort();
      await expect(it.next()).rejects.toMatchObject({ name: 'AbortError' });

      // A request answered and read in full lets go of its signal.
      const kept = new AbortController();
      const whole = await mine(`${srv.url}/json`, { method: 'POST', body: 'x', signal: kept.signal });
      expect(await whole.text()).toBe('{}');
      await new Promise((r) => setImmediate(r));
      expect(getEventListeners(kept.signal, 'abort')).toHaveLength(0);

      const already = new AbortController();
      already.abort();
      const before = srv.seen.length;
      await expect(mine(`${srv.url}/x`, { method: 'POST', body: 'x', signal: already.signal })).rejects.toMatchObject({
        name: 'AbortError',
      });
      await new Promise((r) => setTimeout(r, 20));
      expect(srv.seen.length).toBe(before);
    } finally {
      mine.destroy();
      await srv.close();
    }
  });

  it('survives a connection that breaks under an answer nobody reads (no uncaught error)', async () => {
    const srv = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {}\n\n');
      setTimeout(() => res.socket?.destroy(), 10);
    });
    const mine = createLlmHttpFetch();
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown): void => void uncaught.push(e);
    process.on('uncaughtException', onUncaught);
    try {
      await mine(`${srv.url}/x`, { method: 'POST', body: 'x' });
      await new Promise((r) => setTimeout(r, 60));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
      mine.destroy();
      await srv.close();
    }
  });

  it('answers text(), json() and arrayBuffer() once, with status and headers', async () => {
    const srv = await server((_req, res) => {
      res.writeHead(429, 'Too Many', { 'content-type': 'application/json', 'retry-after': '3', 'x-a': ['1', '2'] });
      res.end(JSON.stringify({ error: { message: 'slow down' } }));
    });
    const mine = createLlmHttpFetch();
    try {
      const r = await mine(`${srv.url}/x`, { method: 'POST', body: 'x' });
      expect([r.status, r.ok, r.statusText, r.headers.get('retry-after'), r.headers.get('x-a')]).toEqual([
        429,
        false,
        'Too Many',
        '3',
        '1, 2',
      ]);
      expect(await r.json()).toEqual({ error: { message: 'slow down' } });
      await expect(r.text()).rejects.toThrow(TypeError);
      const again = await mine(`${srv.url}/x`, { method: 'POST', body: 'x' });
      expect(Buffer.from(await again.arrayBuffer()).toString()).toBe('{"error":{"message":"slow down"}}');
    } finally {
      mine.destroy();
      await srv.close();
    }
  });
});
