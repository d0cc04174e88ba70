import { expect } from '@jest/globals';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { simFail, startLlmSim, type LlmSim } from '@skald/testing';
import { LlmCallError } from './llm-call.error';
import { resolveLlmClients, type LlmClientConfig } from './llm-client-config';
import { LlmManager } from './llm-manager';
import type { LlmDelta, LlmWireMessage } from './llm-wire.types';

const API_KEY = 'sk-manager-test-0123456789abcdef';

describe('LlmManager against llm-sim', () => {
  let sim: LlmSim;
  let manager: LlmManager;

  const config = (overrides: Partial<LlmClientConfig> = {}): LlmClientConfig => ({
    name: 'main',
    baseUrl: sim.url,
    model: 'sim-model',
    apiKey: API_KEY,
    strength: 'high',
    ...overrides,
  });
  const makeManager = (...configs: LlmClientConfig[]): LlmManager => new LlmManager(resolveLlmClients(configs, {}));
  const ask = (key: string): LlmWireMessage[] => [
    { role: 'system', content: 'You are a test.' },
    { role: 'user', content: `hello ${key}` },
  ];

  beforeAll(async () => {
    sim = await startLlmSim();
  });
  beforeEach(() => {
    sim.reset();
    manager = makeManager(
      config({ extraParams: { temperature: 0.3, reasoning_effort: 'low' }, headers: { 'X-Title': 'Skald' } }),
    );
  });
  afterAll(() => sim.close());

  it('streams content and reasoning deltas in order and returns the whole answer with usage', async () => {
    sim.script({
      match: '[T1]',
      replies: [
        {
          reasoning: 'Thinking it over.',
          content: 'The answer is 42.',
          usage: { prompt_tokens: 30, completion_tokens: 9 },
        },
      ],
    });
    const deltas: LlmDelta[] = [];
    const result = await manager.streamChat('main', { messages: ask('[T1]'), onDelta: (d) => deltas.push(d) });

    expect(result).toEqual({
      clientName: 'main',
      model: 'sim-model',
      content: 'The answer is 42.',
      reasoning: 'Thinking it over.',
      toolCalls: [],
      usage: { inputTokens: 30, outputTokens: 9, cachedInputTokens: 0, reasoningTokens: expect.any(Number) },
      metered: { inputTokens: 30, outputTokens: 9, cachedInputTokens: 0, estimated: false, costUsd: null },
      finishReason: 'stop',
    });
    expect(deltas.filter((d) => d.kind === 'content').map((d) => d.delta)).toEqual(['The ', 'answer ', 'is ', '42.']);
    expect(
      deltas
        .filter((d) => d.kind === 'reasoning')
        .map((d) => d.delta)
        .join(''),
    ).toBe('Thinking it over.');
    expect(deltas.findIndex((d) => d.kind === 'content')).toBeGreaterThan(
      deltas.map((d) => d.kind).lastIndexOf('reasoning'),
    );
  });

  it('sends stream: true with include_usage, the client model, extra params and headers, with the key as a bearer', async () => {
    sim.script({ match: '[T2]', replies: [{ content: 'ok' }] });
    await manager.streamChat('main', {
      messages: ask('[T2]'),
      tools: [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object' } } }],
      params: { tool_choice: 'auto' },
    });
    const [entry] = sim.requests({ contains: '[T2]' });
    expect(entry.body).toMatchObject({
      model: 'sim-model',
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.3,
      reasoning_effort: 'low',
      tool_choice: 'auto',
      tools: [{ type: 'function', function: { name: 'read_file' } }],
    });
    expect(entry.authorization).toBe(true);
    expect(entry.headers['x-title']).toBe('Skald');
    expect(entry.headers['openai-organization']).toBeUndefined();
  });

  it('omits tools when there are none', async () => {
    sim.script({ match: '[T3]', replies: [{ content: 'ok' }] });
    await manager.streamChat('main', { messages: ask('[T3]'), tools: [] });
    expect(sim.requests({ contains: '[T3]' })[0].body).not.toHaveProperty('tools');
  });

  it('reassembles streamed tool calls in index order, with their ids and raw argument text', async () => {
    sim.script({
      match: '[T4]',
      replies: [
        {
          content: 'Let me look.',
          tool_calls: [
            { name: 'read_file', arguments: { path: '/workspace/a-long-path/to/some/file.txt' } },
            { id: 'call_given', name: 'execute_cmd', arguments: '{"cmd": "ls -la", "broken": ' },
          ],
        },
      ],
    });
    const result = await manager.streamChat('main', { messages: ask('[T4]') });
    expect(result.finishReason).toBe('tool_calls');
    expect(result.content).toBe('Let me look.');
    expect(result.toolCalls).toEqual([
      {
        id: expect.stringMatching(/^call_/),
        name: 'read_file',
        argumentsText: '{"path":"/workspace/a-long-path/to/some/file.txt"}',
      },
      { id: 'call_given', name: 'execute_cmd', argumentsText: '{"cmd": "ls -la", "broken": ' },
    ]);
  });

  it('reports finish_reason length', async () => {
    sim.script({ match: '[T5]', replies: [{ content: 'truncat', finish_reason: 'length' }] });
    expect((await manager.streamChat('main', { messages: ask('[T5]') })).finishReason).toBe('length');
  });

  it('an abort closes the HTTP connection (the sim sees the client leave) and fails as aborted, not retriable', async () => {
    sim.script({
      match: '[ABORT]',
      replies: [{ content: 'one two three four five six seven eight', latency: { betweenChunksMs: 50 } }],
    });
    const controller = new AbortController();
    const deltas: string[] = [];
    const call = manager.streamChat('main', {
      messages: ask('[ABORT]'),
      signal: controller.signal,
      onDelta: (d) => {
        deltas.push(d.delta);
        if (deltas.length === 2) controller.abort();
      },
    });
    const error = await call.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmCallError);
    expect(error).toMatchObject({ aborted: true, retriable: false, kind: 'aborted', clientName: 'main' });
    const entry = await sim.waitForRequest((r) => JSON.stringify(r.body).includes('[ABORT]') && r.clientAborted);
    expect(entry.outcome).toBe('client_aborted');
    expect(deltas).toEqual(['one ', 'two ']);
    const [status] = await manager.list();
    expect(status.consecutiveFailures).toBe(0);
  });

  it('an abort before the first byte closes the connection too', async () => {
    sim.script({ match: '[ABORT2]', replies: [{ content: 'late', latency: { firstByteMs: 3000 } }] });
    const controller = new AbortController();
    const call = manager.streamChat('main', { messages: ask('[ABORT2]'), signal: controller.signal });
    await sim.waitForRequest((r) => JSON.stringify(r.body).includes('[ABORT2]'));
    controller.abort();
    await expect(call).rejects.toMatchObject({ aborted: true, retriable: false });
    await sim.waitForRequest((r) => JSON.stringify(r.body).includes('[ABORT2]') && r.clientAborted);
  });

  it('an already aborted signal fails at once without a request', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(
      manager.streamChat('main', { messages: ask('[ABORT3]'), signal: controller.signal }),
    ).rejects.toMatchObject({ aborted: true });
    expect(sim.requests({ contains: '[ABORT3]' })).toEqual([]);
  });

  it.each([
    ['429', simFail.rateLimited(3), { kind: 'rate_limited', retriable: true, status: 429, retryAfterMs: 3000 }],
    ['500', simFail.serverError(500), { kind: 'server', retriable: true, status: 500 }],
    ['503', simFail.serverError(503), { kind: 'server', retriable: true, status: 503 }],
    ['401', simFail.http(401), { kind: 'auth', retriable: false, status: 401 }],
    ['403', simFail.http(403), { kind: 'auth', retriable: false, status: 403 }],
    ['404', simFail.http(404), { kind: 'not_found', retriable: false, status: 404 }],
    ['422', simFail.http(422), { kind: 'bad_request', retriable: false, status: 422 }],
    ['a drop before any byte', simFail.drop(), { kind: 'network', retriable: true }],
    ['a drop mid-stream', { content: 'a b c d e f', dropAfterChunks: 3 }, { kind: 'network', retriable: true }],
    ['an in-band stream error', simFail.streamError(2, 'upstream fell over'), { kind: 'server', retriable: true }],
  ] as const)('classifies %s', async (_name, reply, expected) => {
    sim.script({ match: '[ERR]', replies: [reply] });
    const error = await manager.streamChat('main', { messages: ask('[ERR]') }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmCallError);
    expect(error).toMatchObject({ ...expected, aborted: false, clientName: 'main', code: 'llm_call_failed' });
    expect((error as Error).message).toMatch(/^LLM client "main": /);
  });

  it('classifies a 400 from request validation as not retriable, and keeps it out of health', async () => {
    const error = await manager
      .streamChat('main', { messages: [{ role: 'tool', tool_call_id: 'call_x', content: 'orphan' }] })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'bad_request', retriable: false, status: 400 });
    expect((error as Error).message).toContain("role 'tool' must be a response");
    expect((await manager.list())[0].consecutiveFailures).toBe(0);
  });

  it('times out a stalled stream with its idle deadline (retriable) and closes the connection', async () => {
    const quick = makeManager(config({ name: 'quick', idleTimeoutMs: 200 }));
    sim.script({ match: '[STALL]', replies: [simFail.timeout()] });
    const started = Date.now();
    const error = await quick.streamChat('quick', { messages: ask('[STALL]') }).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'timeout', retriable: true, aborted: false });
    expect((error as Error).message).toContain('no data for 200 ms');
    expect(Date.now() - started).toBeLessThan(2000);
    await sim.waitForRequest((r) => JSON.stringify(r.body).includes('[STALL]') && r.clientAborted);
  });

  it('times out a slow stream with the whole-call deadline', async () => {
    const quick = makeManager(config({ name: 'quick', timeoutMs: 300 }));
    sim.script({ match: '[SLOW]', replies: [{ content: 'a b c d e f g h i j', latency: { betweenChunksMs: 100 } }] });
    await expect(quick.streamChat('quick', { messages: ask('[SLOW]') })).rejects.toMatchObject({
      kind: 'timeout',
      retriable: true,
    });
  });

  it('tracks health from call outcomes: degraded after 3 failures, down after 5, healthy after a success', async () => {
    sim.script({
      match: '[H]',
      replies: [...Array.from({ length: 5 }, () => simFail.serverError()), { content: 'back' }],
    });
    const states: string[] = [];
    for (let i = 0; i < 5; i++) {
      await manager.streamChat('main', { messages: ask('[H]') }).catch(() => undefined);
      states.push((await manager.list())[0].health);
    }
    expect(states).toEqual(['healthy', 'healthy', 'degraded', 'degraded', 'down']);
    const [down] = await manager.list();
    expect(down).toMatchObject({ consecutiveFailures: 5, lastError: expect.stringContaining('HTTP 500') });
    await manager.streamChat('main', { messages: ask('[H]') });
    expect((await manager.list())[0]).toMatchObject({ health: 'healthy', consecutiveFailures: 0, lastError: null });
  });

  it('never lets the API key into an error: message, stack, inspect output or JSON', async () => {
    const leaky = `Incorrect API key provided: ${API_KEY}. Authorization: Bearer ${API_KEY}`;
    sim.script({
      match: '[KEY]',
      replies: [simFail.http(401, leaky), simFail.serverError(500, `upstream saw ${API_KEY}`)],
    });
    for (let i = 0; i < 2; i++) {
      const error = await manager.streamChat('main', { messages: ask('[KEY]') }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LlmCallError);
      for (const text of [
        (error as Error).message,
        (error as Error).stack ?? '',
        inspect(error, { depth: 10 }),
        JSON.stringify(error),
      ]) {
        expect(text).not.toContain(API_KEY);
      }
    }
    expect(JSON.stringify(await manager.list())).not.toContain(API_KEY);
  });

  it('never puts the key in an error for an unreachable client', async () => {
    const unreachable = makeManager(config({ name: 'gone', baseUrl: 'http://127.0.0.1:1/v1' }));
    const error = await unreachable.streamChat('gone', { messages: ask('[NET]') }).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'network', retriable: true });
    expect(inspect(error, { depth: 10 })).not.toContain(API_KEY);
  });

  it('does not follow a redirect: the request is not sent again elsewhere, the call fails as a network error', async () => {
    // A base URL answering 307 (the one redirect that re-sends a POST with its body): the SDK's fetch
    // is asked for redirect: 'error' (LLM_FETCH_OPTIONS), so the body is sent once, to the URL configured.
    const redirector = createServer((req, res) => {
      req.resume();
      res.writeHead(307, { location: `${sim.url}${req.url?.replace(/^\/v1/, '') ?? ''}` }).end();
    });
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
    try {
      const port = (redirector.address() as AddressInfo).port;
      const moved = makeManager(config({ name: 'moved', baseUrl: `http://127.0.0.1:${port}/v1` }));
      sim.script({ match: '[REDIR]', replies: [{ content: 'followed' }] });
      const error = await moved.streamChat('moved', { messages: ask('[REDIR]') }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LlmCallError);
      expect(error).toMatchObject({ kind: 'network', retriable: true });
      expect(inspect(error, { depth: 10 })).not.toContain(API_KEY);
      expect(sim.requests().filter((r) => JSON.stringify(r.body).includes('[REDIR]'))).toEqual([]);
    } finally {
      await new Promise((r) => redirector.close(r));
    }
  });

  it('rethrows an exception from onDelta as is, and closes the stream', async () => {
    sim.script({ match: '[CB]', replies: [{ content: 'one two three four five', latency: { betweenChunksMs: 20 } }] });
    const bug = new Error('renderer bug');
    await expect(
      manager.streamChat('main', {
        messages: ask('[CB]'),
        onDelta: () => {
          throw bug;
        },
      }),
    ).rejects.toBe(bug);
    await sim.waitForRequest((r) => JSON.stringify(r.body).includes('[CB]') && r.clientAborted);
  });

  it('refuses an unknown client name with a configuration error', async () => {
    await expect(manager.streamChat('nope', { messages: ask('x') })).rejects.toMatchObject({
      code: 'llm_unknown_client',
    });
  });

  it('selects through AUTO with live health, and lists clients without keys', async () => {
    const many = makeManager(
      config({ name: 'big', strength: 'very_high' }),
      config({ name: 'small', strength: 'low', priority: 10 }),
    );
    expect(await many.select({ requiredStrength: 'medium', tried: [] })).toMatchObject({ name: 'big', reason: 'fit' });
    expect(await many.select({ tried: [] })).toMatchObject({ name: 'small', reason: 'fit' });
    expect(await many.select({ requiredStrength: 'medium', tried: ['big'] })).toMatchObject({
      name: 'small',
      reason: 'scope',
    });
    expect(await many.select({ pinned: 'small', requiredStrength: 'very_high', tried: [] })).toMatchObject({
      name: 'small',
      reason: 'pinned',
    });

    sim.script({ match: '[DOWN]', replies: Array.from({ length: 5 }, () => simFail.serverError()) });
    for (let i = 0; i < 5; i++) await many.streamChat('big', { messages: ask('[DOWN]') }).catch(() => undefined);
    expect(await many.select({ requiredStrength: 'medium', tried: [] })).toMatchObject({
      name: 'small',
      reason: 'scope',
    });
    expect(await many.select({ requiredStrength: 'medium', tried: ['small'] })).toMatchObject({
      name: 'big',
      reason: 'last_resort',
    });
    expect(await many.select({ tried: ['small', 'big'] })).toBeNull();

    const listed = await many.list();
    expect(listed.map((c) => [c.name, c.health])).toEqual([
      ['big', 'down'],
      ['small', 'healthy'],
    ]);
    expect(listed[0]).not.toHaveProperty('apiKey');
  });

  it('builds from the environment', () => {
    const fromEnv = LlmManager.fromEnv({
      OPENAI_BASE_URL: sim.url,
      OPENAI_API_KEY: API_KEY,
      SKALD_LLM_MODEL: 'sim-model',
    });
    expect(fromEnv.names()).toEqual(['default']);
  });
});
