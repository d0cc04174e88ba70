import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startLlmSim, type LlmSim, type SimCompletionReply } from '@skald/testing';
import { resolveLlmClients, type LlmClientDefinition } from './llm-client-config';
import { LlmManager } from './llm-manager';
import type { LlmDelta } from './llm-wire.types';

/** The `config-example` JSON blocks of docs/llm.md, by name: the documented configurations themselves. */
function documentedConfigs(): Record<string, Array<Record<string, unknown>>> {
  const doc = readFileSync(path.join(__dirname, '../../../docs/llm.md'), 'utf8');
  const out: Record<string, Array<Record<string, unknown>>> = {};
  for (const m of doc.matchAll(/<!-- config-example: ([a-z]+) -->\s*```json\n([\s\S]*?)```/g)) {
    out[m[1]] = JSON.parse(m[2]) as Array<Record<string, unknown>>;
  }
  return out;
}

const KEYS = {
  OPENAI_API_KEY: 'sk-openai-test-key-0001',
  OPENROUTER_API_KEY: 'sk-or-test-key-0002',
  VLLM_API_KEY: 'vllm-key-3',
};

describe('the documented provider configurations, against llm-sim', () => {
  let sim: LlmSim;
  const configs = documentedConfigs();

  beforeAll(async () => {
    sim = await startLlmSim();
  });
  afterAll(() => sim.close());
  beforeEach(() => sim.reset());

  /** The documented clients, validated as the worker would, with their base URL swapped for the sim's. */
  const load = (name: string): LlmClientDefinition[] => {
    const raw = configs[name];
    expect(raw).toBeDefined();
    return resolveLlmClients(raw, KEYS, name).map((c) => ({ ...c, baseUrl: sim.url }));
  };

  async function call(client: LlmClientDefinition, marker: string, reply: SimCompletionReply) {
    sim.script({ match: marker, replies: [reply] });
    const deltas: LlmDelta[] = [];
    const result = await new LlmManager([client]).streamChat(client.name, {
      messages: [
        { role: 'system', content: 'You are a test.' },
        { role: 'user', content: `question ${marker}` },
      ],
      onDelta: (d) => deltas.push(d),
    });
    const [request] = sim.requests({ contains: marker });
    return { result, deltas, request, body: request.body as Record<string, unknown> };
  }

  it('documents the four configurations, all valid', () => {
    expect(Object.keys(configs).sort()).toEqual(['ollama', 'openai', 'openrouter', 'vllm']);
  });

  it('OpenAI: bearer key, reasoning_effort for the reasoning model, the provider usage priced', async () => {
    const clients = load('openai');
    expect(clients.map((c) => [c.name, c.strength])).toEqual([
      ['gpt-4.1', 'high'],
      ['gpt-4.1-mini', 'medium'],
      ['o4-mini', 'very_high'],
    ]);
    const o4 = clients.find((c) => c.name === 'o4-mini') as LlmClientDefinition;
    const { result, request, body } = await call(o4, '[OPENAI]', {
      content: 'Done.',
      usage: { prompt_tokens: 1000, completion_tokens: 500 },
    });
    expect(request.authorization).toBe(true);
    expect(body).toMatchObject({ model: 'o4-mini', reasoning_effort: 'medium', stream: true });
    expect(result.metered).toEqual({
      inputTokens: 1000,
      outputTokens: 500,
      cachedInputTokens: 0,
      estimated: false,
      costUsd: 0.0033, // 1000 × 1.1 + 500 × 4.4 per million
    });
  });

  it('OpenRouter: attribution headers, reasoning / provider / usage parameters, reasoning streamed in `reasoning`', async () => {
    const [client] = load('openrouter');
    expect(client.cacheControl).toBe(true);
    const { result, deltas, request, body } = await call(client, '[OPENROUTER]', {
      reasoning: 'Weighing the options.',
      reasoningField: 'reasoning',
      content: 'Option B.',
      usage: { prompt_tokens: 2000, completion_tokens: 100 },
    });
    expect(request.headers['http-referer']).toBe('https://skald.example.com');
    expect(request.headers['x-title']).toBe('Skald');
    expect(request.authorization).toBe(true);
    expect(body).toMatchObject({
      model: 'anthropic/claude-sonnet-4',
      reasoning: { max_tokens: 2000 },
      provider: { order: ['anthropic'], allow_fallbacks: true },
      usage: { include: true },
    });
    expect(result.reasoning).toBe('Weighing the options.');
    expect(deltas.some((d) => d.kind === 'reasoning')).toBe(true);
    expect(result.metered.costUsd).toBe(0.0075); // 2000 × 3 + 100 × 15 per million
  });

  it('Ollama: no key, reasoning in `reasoning`, no usage reported → estimated tokens at zero cost', async () => {
    const [client] = load('ollama');
    expect(client.apiKey).toBeNull();
    const { result, request, body } = await call(client, '[OLLAMA]', {
      reasoning: 'Let me think about this for a while.',
      reasoningField: 'reasoning',
      content: 'Here is a short answer.',
      omitUsage: true,
    });
    expect(request.headers.authorization).toBeUndefined();
    expect(body).toMatchObject({ model: 'qwen3:8b', reasoning_effort: 'low', temperature: 0.6 });
    expect(result.reasoning).toBe('Let me think about this for a while.');
    expect(result.usage).toBeNull();
    expect(result.metered.estimated).toBe(true);
    expect(result.metered.outputTokens).toBe(
      Math.ceil(('Let me think about this for a while.'.length + 'Here is a short answer.'.length) / 4),
    );
    expect(result.metered.inputTokens).toBeGreaterThan(0);
    expect(result.metered.costUsd).toBe(0);
  });

  it('vLLM: key from its variable, chat_template_kwargs and sampling extras, reasoning in `reasoning_content`', async () => {
    const [client] = load('vllm');
    expect(client.apiKey).toBe(KEYS.VLLM_API_KEY);
    const { result, request, body } = await call(client, '[VLLM]', {
      reasoning: 'Thinking in vLLM.',
      content: 'Answer.',
    });
    expect(request.authorization).toBe(true);
    expect(body).toMatchObject({
      model: 'Qwen/Qwen3-32B',
      chat_template_kwargs: { enable_thinking: true },
      top_k: 20,
      repetition_penalty: 1.05,
    });
    expect(result.reasoning).toBe('Thinking in vLLM.');
    expect(result.metered).toMatchObject({ estimated: false, costUsd: null });
  });

  it('never sends the key anywhere but the authorization header, and the request log never keeps it', async () => {
    const [client] = load('openrouter');
    const { request } = await call(client, '[NOKEY]', { content: 'ok' });
    expect(JSON.stringify(request)).not.toContain(KEYS.OPENROUTER_API_KEY);
  });
});
