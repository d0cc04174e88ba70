import { expect } from '@jest/globals';
import type OpenAI from 'openai';
import { startLlmSim, type LlmSim } from './sim-server';
import { marker, openAiFor } from './testing-fixtures/sim-test-client';

describe('llm-sim with the real openai client: answers', () => {
  let sim: LlmSim;
  let client: OpenAI;

  beforeAll(async () => {
    sim = await startLlmSim();
    client = openAiFor(sim);
  });
  afterAll(() => sim.close());

  it('streams text as OpenAI chunks: role first, word deltas, finish_reason stop, then [DONE]', async () => {
    const key = marker('stream-text');
    sim.script({ match: key, replies: [{ content: 'Hello from the sim.' }] });

    const response = await fetch(`${sim.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-x' },
      body: JSON.stringify({ model: 'sim-model', stream: true, messages: [{ role: 'user', content: `hi ${key}` }] }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await response.text()).split('\n\n').filter((e) => e !== '');
    expect(events.every((e) => e.startsWith('data: '))).toBe(true);
    expect(events[events.length - 1]).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)) as OpenAI.ChatCompletionChunk);
    expect(chunks[0]).toEqual({
      id: expect.stringMatching(/^chatcmpl-/),
      object: 'chat.completion.chunk',
      created: expect.any(Number),
      model: 'sim-model',
      system_fingerprint: expect.any(String),
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    });
    const contentDeltas = chunks.slice(1, -1).map((c) => c.choices[0].delta.content);
    expect(contentDeltas).toEqual(['Hello ', 'from ', 'the ', 'sim.']);
    expect(chunks[chunks.length - 1].choices[0]).toEqual({
      index: 0,
      delta: {},
      logprobs: null,
      finish_reason: 'stop',
    });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.some((c) => 'usage' in c)).toBe(false);
  });

  it('streams reasoning_content deltas before the content', async () => {
    const key = marker('reasoning');
    sim.script({ match: key, replies: [{ reasoning: 'Let me think about it.', content: 'Done.' }] });
    const stream = await client.chat.completions.create({
      model: 'sim-model',
      stream: true,
      messages: [{ role: 'user', content: key }],
    });
    const kinds: string[] = [];
    let reasoning = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { reasoning_content?: string; content?: string | null } | undefined;
      if (delta?.reasoning_content) {
        reasoning += delta.reasoning_content;
        kinds.push('reasoning');
      }
      if (delta?.content) kinds.push('content');
    }
    expect(reasoning).toBe('Let me think about it.');
    expect(kinds.indexOf('content')).toBeGreaterThan(kinds.lastIndexOf('reasoning'));
  });

  it('streams tool calls that the SDK reassembles: index, id, type and name first, arguments over several chunks', async () => {
    const key = marker('tools');
    sim.script({
      match: key,
      replies: [
        {
          content: 'Reading both.',
          tool_calls: [
            { name: 'read_file', arguments: { path: '/workspace/notes/a-rather-long-file-name.md' } },
            { id: 'call_fixed', name: 'list_dir', arguments: '{"path": "/workspace"}' },
          ],
        },
      ],
    });
    const rawDeltas: unknown[] = [];
    const stream = client.chat.completions.stream({
      model: 'sim-model',
      messages: [{ role: 'user', content: key }],
      tools: [
        { type: 'function', function: { name: 'read_file', parameters: { type: 'object', properties: {} } } },
        { type: 'function', function: { name: 'list_dir', parameters: { type: 'object', properties: {} } } },
      ],
    });
    stream.on('chunk', (chunk) => rawDeltas.push(...(chunk.choices[0]?.delta.tool_calls ?? [])));
    const final = await stream.finalChatCompletion();

    const message = final.choices[0].message;
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    expect(message.content).toBe('Reading both.');
    expect(message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^call_/),
        type: 'function',
        function: {
          name: 'read_file',
          arguments: JSON.stringify({ path: '/workspace/notes/a-rather-long-file-name.md' }),
        },
      },
      { id: 'call_fixed', type: 'function', function: { name: 'list_dir', arguments: '{"path": "/workspace"}' } },
    ]);
    const firstCallDeltas = rawDeltas.filter((d) => (d as { index: number }).index === 0);
    expect(firstCallDeltas[0]).toEqual({
      index: 0,
      id: expect.any(String),
      type: 'function',
      function: { name: 'read_file', arguments: '' },
    });
    expect(firstCallDeltas.length).toBeGreaterThan(3);
    expect(firstCallDeltas.slice(1).every((d) => !('id' in (d as object)))).toBe(true);
  });

  it('sends a usage chunk (empty choices) after the finish chunk when stream_options.include_usage is set', async () => {
    const key = marker('usage');
    sim.script({ match: key, replies: [{ content: 'counted', usage: { prompt_tokens: 42, completion_tokens: 7 } }] });
    const stream = await client.chat.completions.create({
      model: 'sim-model',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: key }],
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks[chunks.length - 1];
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ prompt_tokens: 42, completion_tokens: 7, total_tokens: 49 });
    expect(chunks[chunks.length - 2].choices[0].finish_reason).toBe('stop');
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('estimates usage when the script does not give it', async () => {
    const key = marker('estimate');
    sim.script({ match: key, replies: [{ content: 'twelve chars' }] });
    const completion = await client.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: key }],
    });
    expect(completion.usage?.completion_tokens).toBe(3);
    expect(completion.usage?.prompt_tokens).toBeGreaterThan(0);
  });

  it('answers a non-streaming request with a chat.completion object, tool calls and usage', async () => {
    const key = marker('non-stream');
    sim.script({
      match: key,
      replies: [
        {
          reasoning: 'hmm',
          tool_calls: [{ name: 'read_file', arguments: { path: 'a' } }],
          usage: { prompt_tokens: 10, completion_tokens: 5 },
        },
      ],
    });
    const completion = await client.chat.completions.create({
      model: 'sim-model-strong',
      messages: [{ role: 'user', content: key }],
      tools: [{ type: 'function', function: { name: 'read_file' } }],
    });
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: 'sim-model-strong',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: null,
            reasoning_content: 'hmm',
            tool_calls: [{ type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } }],
          },
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    });
  });

  it('reports finish_reason length when scripted', async () => {
    const key = marker('length');
    sim.script({ match: key, replies: [{ content: 'cut', finish_reason: 'length' }] });
    const completion = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: key }] });
    expect(completion.choices[0].finish_reason).toBe('length');
  });

  it('lists its models', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['sim-model', 'sim-model-strong', 'sim-model-weak']);
  });
});

describe('llm-sim scripts', () => {
  let sim: LlmSim;
  let client: OpenAI;

  beforeEach(async () => {
    sim = await startLlmSim();
    client = openAiFor(sim);
  });
  afterEach(() => sim.close());

  const ask = async (content: string, extra: OpenAI.ChatCompletionMessageParam[] = []): Promise<string | null> =>
    (await client.chat.completions.create({ model: 'sim-model', messages: [...extra, { role: 'user', content }] }))
      .choices[0].message.content;

  it('keeps keyed scripts apart when requests interleave, and serves unkeyed requests from the default queue', async () => {
    sim.script({ match: '[A]', replies: [{ content: 'a1' }, { content: 'a2' }] });
    sim.script({ match: '[B]', replies: [{ content: 'b1' }, { content: 'b2' }] });
    sim.reply({ content: 'default1' });
    const answers: Array<string | null> = [];
    for (const content of ['x [B]', 'x [A]', 'plain', 'y [A]', 'y [B]']) answers.push(await ask(content));
    expect(answers).toEqual(['b1', 'a1', 'default1', 'a2', 'b2']);
    sim.script({ match: '[D]', replies: [{ content: 'd', latency: { firstByteMs: 30 } }] });
    sim.script({ match: '[E]', replies: [{ content: 'e' }] });
    const concurrent = await Promise.all([ask('[E]'), ask('[D]'), ask('[B] used up')]);
    expect(concurrent.map((a) => (a ?? '').slice(0, 9))).toEqual(['e', 'd', '[llm-sim]']);
  });

  it('matches a marker anywhere in the conversation by default, and only in the last user message with last_user', async () => {
    const history: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'session [S1]' },
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'ok' },
    ];
    sim.script({ match: '[S1]', replies: [{ content: 'from any' }] });
    sim.script({ match: 'first', matchIn: 'last_user', replies: [{ content: 'never' }] });
    expect(await ask('second', history)).toBe('from any');
    expect(sim.scripts().map((s) => s.remaining)).toEqual([0, 1]);
  });

  it('falls through to the default queue when a keyed script is used up, and repeats the last reply when asked', async () => {
    sim.script({ match: '[K]', replies: [{ content: 'keyed' }] });
    sim.script({ replies: [{ content: 'again' }], repeatLast: true });
    expect(await ask('[K] 1')).toBe('keyed');
    expect(await ask('[K] 2')).toBe('again');
    expect(await ask('[K] 3')).toBe('again');
  });

  it('answers a deterministic echo that says it was not scripted, rather than hang', async () => {
    const answer = await ask('what time is it?');
    expect(answer).toBe(
      '[llm-sim] No scripted reply matched this request; echoing the last user message: what time is it?',
    );
    expect(sim.requests()[0].scriptId).toBeNull();
  });

  it('calls a reply function with the request (in-process scripting)', async () => {
    sim.script({
      replies: [({ body, lastUserText }) => ({ content: `${body.messages.length} messages, last: ${lastUserText}` })],
    });
    expect(await ask('ping')).toBe('1 messages, last: ping');
  });

  it('waits the scripted latency before the first byte and between chunks', async () => {
    sim.setLatency({ firstByteMs: 150 });
    sim.reply({ content: 'one two three', latency: { betweenChunksMs: 40 } });
    const started = Date.now();
    const stream = await client.chat.completions.create({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    const arrivals: number[] = [];
    for await (const _chunk of stream) arrivals.push(Date.now() - started);
    expect(arrivals[0]).toBeGreaterThanOrEqual(140);
    expect(arrivals[arrivals.length - 1] - arrivals[0]).toBeGreaterThanOrEqual(4 * 40 - 20);
  });

  it('logs the parsed body, redacts the authorization header to a boolean, and stamps times', async () => {
    sim.reply({ content: 'ok' });
    await ask('logged');
    const [entry] = sim.requests();
    expect(entry).toMatchObject({
      id: 1,
      method: 'POST',
      path: '/v1/chat/completions',
      authorization: true,
      stream: false,
      status: 200,
      outcome: 'completed',
      clientAborted: false,
      body: { model: 'sim-model', messages: [{ role: 'user', content: 'logged' }] },
    });
    expect(JSON.stringify(entry)).not.toContain('sk-sim-test');
    expect(entry.headers.authorization).toBeUndefined();
    expect(Date.parse(entry.finishedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(entry.receivedAt));
  });
});
