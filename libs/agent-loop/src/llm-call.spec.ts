import { DEFAULT_LLM_RETRY } from './llm-retry';
import { LlmError } from './ports';
import { agent, LoopHarness } from './testing';

/** Fallback rules alone: each client is tried once. */
const NO_RETRY = { llmRetry: { ...DEFAULT_LLM_RETRY, triesPerClient: 1 } };

describe('model fallback', () => {
  it('falls back to the next client on a retriable error, announcing model_fallback', async () => {
    const h = new LoopHarness({
      clients: [
        { name: 'alpha', cacheControl: false },
        { name: 'beta', cacheControl: false },
      ],
      script: [{ error: new LlmError('503 overloaded', true) }, { content: 'from beta' }],
      config: NO_RETRY,
    });
    const outcome = await h.run('hi');
    expect(outcome).toMatchObject({ kind: 'final', content: 'from beta' });
    expect(h.model.calls.map((c) => c.client)).toEqual(['alpha', 'beta']);
    expect(h.eventsOf('model_fallback')).toEqual([
      expect.objectContaining({ from: 'alpha', to: 'beta', reason: '503 overloaded' }),
    ]);
    expect(h.model.selections[1].tried).toEqual(['alpha']);
  });

  it('emits llm_failed with every tried client when none is left, and the turn ends failed with an llm_failed error', async () => {
    const h = new LoopHarness({
      clients: [
        { name: 'alpha', cacheControl: false },
        { name: 'beta', cacheControl: false },
      ],
      script: [{ error: new LlmError('timeout', true) }, { error: new LlmError('timeout again', true) }],
      config: NO_RETRY,
    });
    const outcome = await h.run('hi');
    expect(outcome).toEqual({ kind: 'failed', error: 'timeout again' });
    expect(h.eventsOf('llm_failed')).toEqual([
      expect.objectContaining({ tried: ['alpha', 'beta'], last_error: 'timeout again' }),
    ]);
    expect(h.eventsOf('error')).toEqual([expect.objectContaining({ code: 'llm_failed' })]);
  });

  it('does not fall back on a non-retriable error', async () => {
    const h = new LoopHarness({
      clients: [
        { name: 'alpha', cacheControl: false },
        { name: 'beta', cacheControl: false },
      ],
      script: [{ error: new LlmError('400 bad request', false) }, { content: 'never' }],
    });
    const outcome = await h.run('hi');
    expect(outcome.kind).toBe('failed');
    expect(h.model.calls).toHaveLength(1);
    expect(h.eventsOf('model_fallback')).toHaveLength(0);
    expect(h.eventsOf('llm_failed')[0]).toMatchObject({ tried: ['alpha'] });
  });

  it('fails with llm_failed when no client is available at all', async () => {
    const h = new LoopHarness({ clients: [] });
    expect(await h.run('hi')).toEqual({ kind: 'failed', error: 'no LLM client is available' });
    expect(h.eventsOf('llm_failed')[0]).toMatchObject({ tried: [] });
  });

  it('rebuilds the messages when the caching mode changes on fallback', async () => {
    const h = new LoopHarness({
      clients: [
        { name: 'anthropic', cacheControl: true },
        { name: 'plain', cacheControl: false },
      ],
      script: [{ error: new LlmError('rate limited', true) }, { content: 'ok' }],
      config: NO_RETRY,
    });
    await h.run('hi');
    expect(h.model.calls[0].messages[0]).toEqual({
      role: 'system',
      content: [{ type: 'text', text: 'You are the main agent.', cache_control: { type: 'ephemeral' } }],
    });
    expect(h.model.calls[1].messages[0]).toEqual({ role: 'system', content: 'You are the main agent.' });
  });

  it('passes the session pin, then the agent client, and the agent strength to client selection', async () => {
    const h = new LoopHarness({
      agents: [],
      session: { pinnedClient: 'big' },
      script: [{ content: 'ok' }],
    });
    h.catalog.add(agent({ id: 'main', type: 'chat', client: 'agent-client', strength: 'strong' }));
    await h.run('hi');
    expect(h.model.selections[0]).toMatchObject({ pinned: 'big', strength: 'strong', agentId: 'main' });
  });

  it('treats a thrown non-LlmError as non-retriable', async () => {
    const h = new LoopHarness({
      clients: [
        { name: 'alpha', cacheControl: false },
        { name: 'beta', cacheControl: false },
      ],
      script: [{ error: new Error('socket hang up') }],
    });
    expect(await h.run('hi')).toEqual({ kind: 'failed', error: 'socket hang up' });
  });

  it('makes at most maxLlmAttempts calls a round, then llm_failed names the clients tried', async () => {
    const h = new LoopHarness({
      clients: ['a', 'b', 'c', 'd'].map((name) => ({ name, cacheControl: false })),
      config: NO_RETRY,
      script: [
        { error: new LlmError('HTTP 503', true) },
        { error: new LlmError('HTTP 429', true) },
        { error: new LlmError('timed out', true) },
        { content: 'never reached' },
      ],
    });
    expect(await h.run('hi')).toEqual({ kind: 'failed', error: 'timed out' });
    expect(h.model.calls.map((c) => c.client)).toEqual(['a', 'b', 'c']);
    expect(h.eventsOf('model_fallback').map((e) => [e.from, e.to])).toEqual([
      ['a', 'b'],
      ['b', 'c'],
    ]);
    expect(h.eventsOf('llm_failed')).toEqual([
      expect.objectContaining({ tried: ['a', 'b', 'c'], last_error: 'timed out' }),
    ]);
  });

  it('a refusal of the port (a used-up budget) ends the turn with its own error code, calling no model', async () => {
    const h = new LoopHarness({ script: [{ content: 'never' }] });
    h.model.refusal = { code: 'exhausted', message: 'Daily token budget of 1000 tokens used up.' };
    const outcome = await h.run('hi');
    expect(outcome).toEqual({ kind: 'failed', error: 'Daily token budget of 1000 tokens used up.', code: 'exhausted' });
    expect(h.model.calls).toHaveLength(0);
    expect(h.eventsOf('llm_failed')).toHaveLength(0);
    expect(h.eventsOf('error')).toEqual([
      expect.objectContaining({ code: 'exhausted', message: 'Daily token budget of 1000 tokens used up.' }),
    ]);
    expect(h.model.admitted[0]).toMatchObject({ sessionId: h.sessionId, userId: 'user-1', agentId: 'main' });
  });

  it('stores the usage, cost, client and model of the answer with the assistant message', async () => {
    const h = new LoopHarness({
      clients: [{ name: 'alpha', cacheControl: false }],
      script: [
        {
          content: 'answer',
          model: 'gpt-x',
          usage: { inputTokens: 120, outputTokens: 30, costUsd: 0.00042, estimated: true },
        },
      ],
    });
    await h.run('hi');
    const assistant = h.store.view().messages.find((m) => m.role === 'assistant');
    expect(assistant).toMatchObject({
      inputTokens: 120,
      outputTokens: 30,
      costUsd: 0.00042,
      tokensEstimated: true,
      llmClient: 'alpha',
      llmModel: 'gpt-x',
    });
    expect(h.model.calls[0].context).toMatchObject({ purpose: 'round', messageId: assistant?.id, userId: 'user-1' });
    expect(h.eventsOf('done')[0]).toMatchObject({ input_tokens: 120, output_tokens: 30 });
  });

  it("passes the agent's scope to client selection", async () => {
    const h = new LoopHarness({ agents: [], script: [{ content: 'ok' }] });
    h.catalog.add(agent({ id: 'main', type: 'chat', scope: 'coding', strength: 'high' }));
    await h.run('hi');
    expect(h.model.selections[0]).toMatchObject({ scope: 'coding', strength: 'high' });
  });
});
