import { expect } from '@jest/globals';
import fc from 'fast-check';
import { connect } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startLlmSim, type LlmSim } from './sim-server';
import type { SimCompletionReply, SimToolCall } from './sim-types';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

/**
 * llm-sim's wire bytes, as the client's socket receives them: status line, headers and the SSE
 * events of the chunked body (its framing checked valid; where it cuts chunks is Node's, see dechunk). An unpaced streamed answer (no delay between chunks, no scripted drop)
 * is written in one pass under one cork; the paced path (a delay between chunks) is the one-write-
 * per-event code every answer took before. Differential: for generated requests and scripted
 * replies both give the same bytes, up to what differs between any two requests (the completion
 * and request ids, the `created` second, generated tool call ids, the Date header).
 *
 * `SIM_OLD_DIST=<dir of an older build of libs/testing>` runs the same cases against that build's
 * sim (its unpaced answers) instead of the paced path of this one: a before/after check of a change.
 */
type Start = typeof startLlmSim;
const OLD_DIST = process.env.SIM_OLD_DIST;
const startOld: Start | null = OLD_DIST ? loadStart(OLD_DIST) : null;

function loadStart(dist: string): Start {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(`${dist}/llm-sim/sim-server`) as { startLlmSim: Start };
  return mod.startLlmSim;
}

/** One raw HTTP/1.1 exchange of a chunked answer: every byte the server sent, as latin1 text. */
function rawExchange(port: number, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const parts: Buffer[] = [];
    // The sim answers a stream with `connection: keep-alive` whatever was asked: the exchange ends
    // with the terminating chunk.
    socket.on('data', (b: Buffer) => {
      parts.push(b);
      const all = Buffer.concat(parts).toString('latin1');
      if (all.endsWith('\r\n0\r\n\r\n')) {
        socket.destroy();
        resolve(all);
      }
    });
    socket.on('end', () =>
      reject(new Error(`closed before the last chunk: ${Buffer.concat(parts).toString('latin1')}`)),
    );
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    const bytes = Buffer.from(body, 'utf8');
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
        `authorization: Bearer sk-wire\r\nconnection: close\r\ncontent-length: ${bytes.length}\r\n\r\n`,
    );
    socket.write(bytes);
  });
}

/**
 * The exchange with its chunked body decoded (status line and headers as sent, then the body's bytes),
 * failing on framing that is not valid chunked encoding. The chunk boundaries themselves are left
 * out: Node 20 frames each write made under a cork as a chunk of its own, Node 26 joins them into one,
 * and no client sees them.
 */
function dechunk(raw: string): string {
  const at = raw.indexOf('\r\n\r\n');
  if (at < 0) throw new Error(`no end of headers in ${JSON.stringify(raw.slice(0, 200))}`);
  let rest = raw.slice(at + 4);
  let body = '';
  // Bounded: every pass consumes at least the size line, and the terminating chunk ends the loop.
  for (;;) {
    const line = /^([0-9a-f]+)\r\n/i.exec(rest);
    if (!line) throw new Error(`not a chunk size line: ${JSON.stringify(rest.slice(0, 40))}`);
    const size = parseInt(line[1], 16);
    const start = line[0].length;
    if (rest.slice(start + size, start + size + 2) !== '\r\n')
      throw new Error(`chunk of ${size} bytes not ended by CRLF`);
    if (size === 0) break;
    body += rest.slice(start, start + size);
    rest = rest.slice(start + size + 2);
  }
  return `${raw.slice(0, at + 4)}${body}`;
}

const normalize = (raw: string): string =>
  dechunk(raw)
    .replace(/\r\ndate: [^\r]*/i, '\r\ndate: <date>')
    .replace(/chatcmpl-sim\d+/g, 'chatcmpl-sim<n>')
    .replace(/req_sim_\d+/g, 'req_sim_<n>')
    .replace(/"created":\d+/g, '"created":<t>')
    .replace(/call_sim_\d+/g, 'call_sim_<n>');

// Text with what the wire must escape or keep whole: quotes, backslashes, control characters, lone
// and paired surrogates, runs of whitespace (the word splitter), non-ASCII.
const unit = fc.oneof(
  fc.constantFrom(' ', '  ', '\n', '\t', '"', '\\', '\u0001', '\u007f', 'é', '\u{1F600}', '\ud800', '\udc00', '/'),
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }),
);
const text = fc.string({ unit, maxLength: 60 });
const toolCall: fc.Arbitrary<SimToolCall> = fc.record(
  {
    name: fc.stringMatching(/^[a-z_]{1,12}$/),
    arguments: fc.oneof(fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 })), text),
    id: fc.stringMatching(/^call_[a-z0-9]{1,8}$/),
  },
  { requiredKeys: ['name', 'arguments'] },
);
const reply: fc.Arbitrary<SimCompletionReply> = fc.record(
  {
    content: text,
    reasoning: text,
    reasoningField: fc.constantFrom('reasoning_content' as const, 'reasoning' as const),
    omitUsage: fc.boolean(),
    tool_calls: fc.array(toolCall, { maxLength: 3 }),
    finish_reason: fc.constantFrom(
      'stop' as const,
      'tool_calls' as const,
      'length' as const,
      'content_filter' as const,
    ),
    usage: fc.record({ prompt_tokens: fc.nat(5000), completion_tokens: fc.nat(5000) }, { requiredKeys: [] }),
    chunkSize: fc.integer({ min: 1, max: 20 }),
  },
  { requiredKeys: [] },
);
const request = fc.record({
  system: fc.option(text, { nil: undefined }),
  user: text,
  includeUsage: fc.option(fc.boolean(), { nil: undefined }),
  tools: fc.option(fc.uniqueArray(fc.stringMatching(/^[a-z]{1,8}$/), { maxLength: 3 }), { nil: undefined }),
});

describe('llm-sim wire bytes of a streamed answer (differential)', () => {
  let sim: LlmSim;
  let reference: LlmSim;
  let seq = 0;

  beforeAll(async () => {
    sim = await startLlmSim();
    reference = startOld ? await startOld() : sim;
  });
  afterAll(async () => {
    await sim.close();
    if (reference !== sim) await reference.close();
  });

  it('unpaced (one pass, one cork) gives the same bytes as the paced one-write-per-event path, up to the chunk framing', async () => {
    await fc.assert(
      fc.asyncProperty(request, reply, async (req, answer) => {
        const key = `[[wire-${seq++}]]`;
        const body = JSON.stringify({
          model: 'sim-model',
          stream: true,
          ...(req.includeUsage === undefined ? {} : { stream_options: { include_usage: req.includeUsage } }),
          messages: [
            ...(req.system === undefined ? [] : [{ role: 'system', content: req.system }]),
            { role: 'user', content: `${req.user} ${key}` },
          ],
          ...(req.tools === undefined
            ? {}
            : {
                tools: req.tools.map((name) => ({
                  type: 'function',
                  function: { name, parameters: { type: 'object' } },
                })),
              }),
        });
        sim.script({ match: key, matchIn: 'last_user', replies: [answer] });
        const fast = await rawExchange(sim.port, body);
        if (reference === sim) {
          sim.script({ match: key, matchIn: 'last_user', replies: [{ ...answer, latency: { betweenChunksMs: 1 } }] });
        } else {
          reference.script({ match: key, matchIn: 'last_user', replies: [answer] });
        }
        const before = await rawExchange(reference.port, body);
        expect(fast).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
        expect(fast).toContain('data: [DONE]\n\n');
        expect(normalize(fast)).toBe(normalize(before));
      }),
      { seed: SEED, numRuns: 100 },
    );
  }, 120_000);

  it('a log entry reads as before once the answer is out: completed, every event counted', async () => {
    const key = '[[wire-log]]';
    sim.script({ match: key, replies: [{ content: 'one two three' }] });
    const raw = await rawExchange(
      sim.port,
      JSON.stringify({ model: 'sim-model', stream: true, messages: [{ role: 'user', content: key }] }),
    );
    // role, three words, finish, [DONE]
    expect(raw.match(/data: /g)).toHaveLength(6);
    expect(sim.requests({ contains: key })[0]).toMatchObject({
      status: 200,
      outcome: 'completed',
      chunksSent: 6,
      clientAborted: false,
      finishedAt: expect.any(String),
    });
  });

  // 30 s: three full collections of a worker's heap take seconds on a loaded machine
  it('keeps no parsed request once answered: the body a reply saw can be collected (the log keeps the raw text)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const key = '[[wire-retained]]';
    const seen: Array<WeakRef<object>> = [];
    sim.script({
      match: key,
      repeatLast: true,
      replies: [
        (ctx) => {
          seen.push(new WeakRef(ctx.body));
          return { content: 'ok' };
        },
      ],
    });
    for (let i = 0; i < 5; i++) {
      await rawExchange(
        sim.port,
        JSON.stringify({ model: 'sim-model', stream: true, messages: [{ role: 'user', content: `${key} ${i}` }] }),
      );
    }
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc();
    }
    expect(seen.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
    // and the log still answers with the bodies, parsed from its raw text
    expect(sim.requests({ contains: key }).map((e) => (e.body as { messages: unknown[] }).messages)).toHaveLength(5);
  }, 30_000);

  // 30 s: three full collections of a worker's heap take seconds on a loaded machine
  it('holds no parsed request through the first-byte delay: only what the answer needs of it', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const key = '[[wire-delay]]';
    let seen: WeakRef<object> | null = null;
    let chosen = (): void => undefined;
    const replied = new Promise<void>((resolve) => (chosen = resolve));
    sim.script({
      match: key,
      replies: [
        (ctx) => {
          seen = new WeakRef(ctx.body);
          chosen();
          return { content: 'late', latency: { firstByteMs: 400 } };
        },
      ],
    });
    const body = JSON.stringify({
      model: 'sim-model',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: `${key} ${'x'.repeat(400)}` }],
    });
    const answer = rawExchange(sim.port, body);
    await replied;
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc();
    }
    const alive = (seen as WeakRef<object> | null)?.deref() !== undefined;
    const raw = await answer;
    expect(alive).toBe(false);
    // the usage still counts the prompt: (JSON of the messages + of no tools) / 4
    const promptTokens = Math.ceil(
      (JSON.stringify((JSON.parse(body) as { messages: unknown[] }).messages).length + 2) / 4,
    );
    expect(raw).toContain(`"prompt_tokens":${promptTokens},`);
  }, 30_000);
});
