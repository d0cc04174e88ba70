import type { LlmClientInfo } from '@skald/contracts';
import { costText, duration, modelsText, usd } from './llm-texts';

const client = (over: Partial<LlmClientInfo>): LlmClientInfo => ({
  number: 1,
  name: 'gpt',
  model: 'gpt-4.1',
  strength: 'high',
  scopes: [],
  priority: 100,
  health: 'healthy',
  consecutive_failures: 0,
  last_error: null,
  last_success_at: null,
  last_failure_at: null,
  input_cost_per_million: null,
  output_cost_per_million: null,
  vision: false,
  pinned: false,
  ...over,
});

describe('LLM command texts', () => {
  it('formats durations and small amounts of money readably', () => {
    expect(duration(30_000)).toBe('less than a minute');
    expect(duration(42 * 60_000)).toBe('42 min');
    expect(usd(0.0036)).toBe('$0.0036');
    expect(usd(0.000042)).toBe('$0.000042');
    expect(usd(0.5)).toBe('$0.5000');
    expect(usd(12.5)).toBe('$12.50');
    expect(usd(0)).toBe('$0.00');
  });

  it('/models numbers the clients, shows health with the last error, and the pin', () => {
    const text = modelsText(
      [
        client({ input_cost_per_million: 2, output_cost_per_million: 8, pinned: true }),
        client({
          number: 2,
          name: 'local',
          model: 'qwen3:8b',
          strength: 'low',
          scopes: ['coding'],
          health: 'down',
          consecutive_failures: 5,
          last_error: 'LLM client "local": network error: connect ECONNREFUSED',
        }),
      ],
      'gpt',
      'web',
      'shared',
    );
    expect(text.split('\n')).toEqual([
      'Models (health across every worker):',
      '  1. gpt: gpt-4.1, strength high, $2/$8 per M tokens in/out, healthy  [pinned]',
      '  2. local: qwen3:8b, strength low, scope coding, down (5 failures in a row: LLM client "local": network error: connect ECONNREFUSED)',
      'Pinned for web: gpt.',
      'Change it with /model <number|name|auto>.',
    ]);
    expect(modelsText([client({})], 'gone', 'cli', 'local')).toContain("Models (this worker's health only):");
    expect(modelsText([client({})], 'gone', 'cli', 'local')).toContain(
      'gone, which is no longer configured, so AUTO is used',
    );
  });

  it('/cost totals per client, says when a cost is unknown or estimated, and ends with the budget lines', () => {
    const text = costText(
      [
        {
          client: 'gpt',
          model: 'gpt-4.1',
          calls: 2,
          inputTokens: 2000,
          outputTokens: 200,
          costUsd: 0.0056,
          estimated: false,
        },
        {
          client: 'local',
          model: 'qwen3',
          calls: 1,
          inputTokens: 500,
          outputTokens: 50,
          costUsd: null,
          estimated: true,
        },
      ],
      [
        'Today (UTC): 120,500 tokens of your daily token limit of 200,000 used; it resets at 00:00 UTC on 2025-12-01 (in 5 h 12 min).',
      ],
    );
    expect(text).toContain('This conversation: 2,750 tokens (2,500 in, 250 out) in 3 model calls, at least $0.0056.');
    expect(text).toContain(
      '  local (qwen3): 550 tokens (500 in, 50 out), 1 call, no price configured, partly estimated',
    );
    expect(text).toContain('Estimated counts');
    expect(text.split('\n').at(-1)).toMatch(/^Today \(UTC\): 120,500 tokens of your daily token limit/);
    expect(costText([], ['Today (UTC): 120,500 tokens used; no budget is set.'])).toBe(
      'This conversation has not called a model yet.\nToday (UTC): 120,500 tokens used; no budget is set.',
    );
  });
});
