import OpenAI, { APIConnectionError, APIUserAbortError, InternalServerError, RateLimitError } from 'openai';
import { simFail } from './sim-replies';
import { startLlmSim, type LlmSim } from './sim-server';
import { marker, openAiFor } from './testing-fixtures/sim-test-client';

describe('llm-sim failures on demand, seen through the real openai client', () => {
  let sim: LlmSim;
  let client: OpenAI;

  beforeAll(async () => {
    sim = await startLlmSim();
    client = openAiFor(sim);
  });
  afterAll(() => sim.close());

  const messages = (key: string): OpenAI.ChatCompletionMessageParam[] => [{ role: 'user', content: key }];

  it('429 surfaces as RateLimitError with retry-after and the OpenAI error body', async () => {
    const key = marker('429');
    sim.script({ match: key, replies: [simFail.rateLimited(7)] });
    const error = await client.chat.completions
      .create({ model: 'm', messages: messages(key) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    const rateLimit = error as RateLimitError;
    expect(rateLimit.status).toBe(429);
    expect(rateLimit.headers.get('retry-after')).toBe('7');
    expect(rateLimit.code).toBe('rate_limit_exceeded');
    expect(sim.requests({ contains: key })[0]).toMatchObject({ status: 429, outcome: 'http_error' });
  });

  it('500 surfaces as InternalServerError, and the SDK retry then gets the next scripted reply', async () => {
    const key = marker('500');
    sim.script({
      match: key,
      replies: [simFail.serverError(), simFail.rateLimited(0), { content: 'third time lucky' }],
    });
    await expect(
      client.chat.completions.create({ model: 'm', stream: true, messages: messages(key) }),
    ).rejects.toBeInstanceOf(InternalServerError);
    const retrying = openAiFor(sim, { maxRetries: 1 });
    const completion = await retrying.chat.completions.create({ model: 'm', messages: messages(key) });
    expect(completion.choices[0].message.content).toBe('third time lucky');
    expect(sim.requests({ contains: key }).map((r) => r.status)).toEqual([500, 429, 200]);
  });

  it('drops the connection mid-stream after N chunks: the client gets them, then a network error', async () => {
    const key = marker('drop');
    sim.script({ match: key, replies: [{ content: 'one two three four five six', dropAfterChunks: 3 }] });
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: messages(key) });
    const received: string[] = [];
    const error = await (async () => {
      for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? '');
    })().catch((e: unknown) => e);
    expect(received).toEqual(['', 'one ', 'two ']);
    // undici's `TypeError: terminated` (from Node's realm, hence no instanceof check under Jest).
    expect(String((error as Error).message)).toMatch(/terminated|other side closed|socket/i);
    expect(sim.requests({ contains: key })[0]).toMatchObject({
      outcome: 'dropped',
      chunksSent: 3,
      clientAborted: false,
    });
  });

  it('drops the connection before any byte: APIConnectionError', async () => {
    const key = marker('drop-early');
    sim.script({ match: key, replies: [simFail.drop()] });
    await expect(client.chat.completions.create({ model: 'm', messages: messages(key) })).rejects.toBeInstanceOf(
      APIConnectionError,
    );
  });

  it('an in-band stream error event surfaces as an APIError after the first chunks', async () => {
    const key = marker('stream-error');
    sim.script({ match: key, replies: [simFail.streamError(2, 'provider melted')] });
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: messages(key) });
    let chunks = 0;
    const error = await (async () => {
      for await (const _chunk of stream) chunks += 1;
    })().catch((e: unknown) => e);
    expect(chunks).toBe(2);
    expect((error as Error).message).toContain('provider melted');
  });

  it('timeout: accepts and never answers, until the client gives up; the log shows the client aborted', async () => {
    const key = marker('timeout');
    sim.script({ match: key, replies: [simFail.timeout()] });
    const started = Date.now();
    await expect(
      client.chat.completions.create({ model: 'm', messages: messages(key) }, { timeout: 300 }),
    ).rejects.toBeInstanceOf(APIConnectionError);
    // Plain Node gives the APIConnectionTimeoutError subclass; under Jest the AbortError comes from
    // another realm and the SDK reports a plain APIConnectionError.
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    const entry = await sim.waitForRequest(
      (r) => r.body !== null && JSON.stringify(r.body).includes(key) && r.clientAborted,
    );
    expect(entry).toMatchObject({ outcome: 'timeout', status: 0 });
  });

  it('an AbortSignal fired mid-stream closes the connection, and the log records clientAborted', async () => {
    const key = marker('abort');
    sim.script({ match: key, replies: [{ content: 'a b c d e f g h i j k l', latency: { betweenChunksMs: 30 } }] });
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: 'm', stream: true, messages: messages(key) },
      { signal: controller.signal },
    );
    let chunks = 0;
    const error = await (async () => {
      for await (const _chunk of stream) {
        chunks += 1;
        if (chunks === 3) controller.abort();
      }
    })().catch((e: unknown) => e);
    // The SDK ends the iteration quietly on abort (or throws APIUserAbortError, depending on timing).
    if (error !== undefined) expect(error).toBeInstanceOf(APIUserAbortError);
    const entry = await sim.waitForRequest((r) => JSON.stringify(r.body).includes(key) && r.clientAborted);
    expect(entry.outcome).toBe('client_aborted');
    expect(entry.chunksSent).toBeLessThan(14);
  });

  it('an abort while waiting for the first byte is logged too', async () => {
    const key = marker('abort-early');
    sim.script({ match: key, replies: [{ content: 'late', latency: { firstByteMs: 2000 } }] });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    await expect(
      client.chat.completions.create(
        { model: 'm', stream: true, messages: messages(key) },
        { signal: controller.signal },
      ),
    ).rejects.toBeInstanceOf(APIUserAbortError);
    const entry = await sim.waitForRequest((r) => JSON.stringify(r.body).includes(key) && r.clientAborted);
    expect(entry).toMatchObject({ outcome: 'client_aborted', status: 0, chunksSent: 0 });
  });

  it('requires the API key when started with one', async () => {
    const guarded = await startLlmSim({ apiKey: 'sk-right' });
    try {
      const wrong = new OpenAI({ baseURL: guarded.url, apiKey: 'sk-wrong', maxRetries: 0 });
      await expect(wrong.chat.completions.create({ model: 'm', messages: messages('x') })).rejects.toMatchObject({
        status: 401,
      });
      const right = new OpenAI({ baseURL: guarded.url, apiKey: 'sk-right', maxRetries: 0 });
      await expect(right.chat.completions.create({ model: 'm', messages: messages('x') })).resolves.toBeDefined();
    } finally {
      await guarded.close();
    }
  });
});
