import { LlmConfigError } from './llm-config.error';
import { loadLlmConfigFromEnv } from './llm-config-from-env';

describe('LLM clients from the environment', () => {
  it('has no clients when nothing is configured', () => {
    expect(loadLlmConfigFromEnv({})).toEqual({ clients: [], source: 'none' });
  });

  it('builds one client named default from OPENAI_BASE_URL, OPENAI_API_KEY and SKALD_LLM_MODEL', () => {
    const { clients, source } = loadLlmConfigFromEnv({
      OPENAI_BASE_URL: 'http://127.0.0.1:4010/v1/',
      OPENAI_API_KEY: 'sk-env-key',
      SKALD_LLM_MODEL: 'sim-model',
    });
    expect(source).toBe('OPENAI_ENV');
    expect(clients).toEqual([
      expect.objectContaining({
        name: 'default',
        baseUrl: 'http://127.0.0.1:4010/v1',
        model: 'sim-model',
        apiKey: 'sk-env-key',
        strength: 'medium',
        scopes: [],
        priority: 100,
        cacheControl: false,
      }),
    ]);
  });

  it('defaults the base URL to OpenAI and requires the model', () => {
    expect(loadLlmConfigFromEnv({ OPENAI_API_KEY: 'k', SKALD_LLM_MODEL: 'gpt-4o-mini' }).clients[0].baseUrl).toBe(
      'https://api.openai.com/v1',
    );
    expect(() => loadLlmConfigFromEnv({ OPENAI_API_KEY: 'sk-secret-value-1' })).toThrow(/SKALD_LLM_MODEL is required/);
  });

  it('reads several clients from SKALD_LLM_CLIENTS, keys from named env vars, snake_case accepted', () => {
    const env = {
      OPENROUTER_KEY: 'sk-or-secret',
      SKALD_LLM_CLIENTS: JSON.stringify([
        {
          name: 'router',
          base_url: 'https://openrouter.ai/api/v1',
          model: 'anthropic/claude-sonnet-4',
          api_key_env: 'OPENROUTER_KEY',
          strength: 'very_high',
          scope: ['coding', 'chat'],
          priority: 1,
          extra_params: { provider: { order: ['anthropic'] } },
          cache_control: true,
          headers: { 'X-Title': 'Skald' },
        },
        { name: 'local', baseUrl: 'http://localhost:11434/v1', model: 'qwen3:8b', strength: 'low', scope: 'chat' },
      ]),
    };
    const { clients, source } = loadLlmConfigFromEnv(env);
    expect(source).toBe('SKALD_LLM_CLIENTS');
    expect(clients[0]).toMatchObject({
      name: 'router',
      apiKey: 'sk-or-secret',
      strength: 'very_high',
      scopes: ['coding', 'chat'],
      priority: 1,
      cacheControl: true,
      extraParams: { provider: { order: ['anthropic'] } },
      headers: { 'X-Title': 'Skald' },
    });
    expect(clients[1]).toMatchObject({ name: 'local', apiKey: null, strength: 'low', scopes: ['chat'] });
  });

  it('names every problem at once, and never the value of a key', () => {
    const env = {
      SKALD_LLM_CLIENTS: JSON.stringify([
        {
          name: 'a',
          baseUrl: 'ftp://x',
          model: '',
          strength: 'huge',
          apiKey: 'sk-inline-secret-123456',
          apiKeyEnv: 'X',
        },
        { name: 'b', baseUrl: 'http://b/v1', model: 'm', apiKeyEnv: 'MISSING_KEY', tmperature: 1 },
        { name: 'b', baseUrl: 'http://b/v1', model: 'm' },
      ]),
    };
    let error: unknown;
    try {
      loadLlmConfigFromEnv(env);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(LlmConfigError);
    const message = (error as Error).message;
    for (const fragment of [
      'baseUrl',
      'model',
      'strength',
      'not both',
      'MISSING_KEY is not set',
      'tmperature: unknown setting',
    ]) {
      expect(message).toContain(fragment);
    }
    expect(message).not.toContain('sk-inline-secret-123456');
  });

  it('reports duplicate names and invalid JSON', () => {
    const dup = JSON.stringify([
      { name: 'x', baseUrl: 'http://a/v1', model: 'm' },
      { name: 'x', baseUrl: 'http://b/v1', model: 'm' },
    ]);
    expect(() => loadLlmConfigFromEnv({ SKALD_LLM_CLIENTS: dup })).toThrow(/duplicate client name "x"/);
    expect(() => loadLlmConfigFromEnv({ SKALD_LLM_CLIENTS: '[{' })).toThrow(/not valid JSON/);
    expect(() => loadLlmConfigFromEnv({ SKALD_LLM_CLIENTS: '[]' })).toThrow(/empty list/);
  });
});
