import { resolveLlmClients } from './llm-client-config';
import { costOf, estimateInputTokens, meterCall } from './llm-metering';

describe('metering LLM calls', () => {
  const priced = resolveLlmClients(
    [
      {
        name: 'gpt',
        baseUrl: 'https://api.openai.com/v1',
        model: 'gpt-4.1-mini',
        input_cost_per_million: 0.4,
        output_cost_per_million: 1.6,
        cached_input_cost_per_million: 0.1,
      },
    ],
    {},
  )[0];
  const free = resolveLlmClients([{ name: 'local', baseUrl: 'http://localhost:11434/v1', model: 'qwen3' }], {})[0];

  it('prices the provider usage with the client prices, cached prompt tokens at the cached price', () => {
    expect(priced.pricing).toEqual({ inputPerMillion: 0.4, outputPerMillion: 1.6, cachedInputPerMillion: 0.1 });
    // 1M prompt of which 200k cached, 100k completion: 0.8M × 0.4 + 0.2M × 0.1 + 0.1M × 1.6 = 0.5 USD
    expect(costOf(priced.pricing, { inputTokens: 1_000_000, outputTokens: 100_000, cachedInputTokens: 200_000 })).toBe(
      0.5,
    );
    const metered = meterCall(
      priced,
      { messages: [{ role: 'user', content: 'hi' }] },
      { content: 'hello', reasoning: '', toolCalls: [], usage: { inputTokens: 2500, outputTokens: 500 } },
    );
    expect(metered).toEqual({
      inputTokens: 2500,
      outputTokens: 500,
      cachedInputTokens: 0,
      estimated: false,
      costUsd: 0.0018,
    });
  });

  it('estimates tokens from the text when the provider reports no usage, and says so', () => {
    const messages = [
      { role: 'system' as const, content: 'x'.repeat(400) },
      { role: 'user' as const, content: 'y'.repeat(400) },
    ];
    const metered = meterCall(
      priced,
      { messages },
      {
        content: 'z'.repeat(200),
        reasoning: 'r'.repeat(200),
        toolCalls: [{ id: 'c1', name: 'read_file', argumentsText: '{"path":"a"}' }],
        usage: null,
      },
    );
    expect(metered.estimated).toBe(true);
    expect(metered.inputTokens).toBe(estimateInputTokens({ messages }));
    expect(metered.inputTokens).toBeGreaterThanOrEqual(200);
    expect(metered.outputTokens).toBe(Math.ceil((200 + 200 + 'read_file'.length + '{"path":"a"}'.length) / 4));
    expect(metered.costUsd).toBeGreaterThan(0);
  });

  it('counts tool definitions in the estimate of the prompt', () => {
    const messages = [{ role: 'user' as const, content: 'hi' }];
    const tools = [{ type: 'function' as const, function: { name: 'read_file', parameters: { type: 'object' } } }];
    expect(estimateInputTokens({ messages, tools })).toBeGreaterThan(estimateInputTokens({ messages }));
  });

  it('has no cost for a client without prices', () => {
    expect(free.pricing).toBeNull();
    expect(
      meterCall(
        free,
        { messages: [] },
        { content: 'a', reasoning: '', toolCalls: [], usage: { inputTokens: 10, outputTokens: 1 } },
      ).costUsd,
    ).toBeNull();
  });

  it('refuses half a price list or a negative price, naming the setting', () => {
    expect(() =>
      resolveLlmClients([{ name: 'a', baseUrl: 'http://a/v1', model: 'm', inputCostPerMillion: 1 }], {}),
    ).toThrow(/\(a\)\.outputCostPerMillion: give both prices/);
    expect(() =>
      resolveLlmClients(
        [{ name: 'a', baseUrl: 'http://a/v1', model: 'm', inputCostPerMillion: -1, outputCostPerMillion: 1 }],
        {},
      ),
    ).toThrow(/\(a\)\.inputCostPerMillion: expected a price in USD per million tokens/);
  });
});
