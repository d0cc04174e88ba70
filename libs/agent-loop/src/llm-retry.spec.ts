import fc from 'fast-check';
import { DEFAULT_LLM_RETRY, retryDelayMs, type LlmRetryPolicy } from './llm-retry';
import { LlmError } from './ports';
import { LoopHarness } from './testing';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

describe('retryDelayMs (the same-client retry policy)', () => {
  it('backs off exponentially without a Retry-After, and stops after triesPerClient tries', () => {
    const p = DEFAULT_LLM_RETRY;
    expect(retryDelayMs(p, 1, 0)).toBe(1_000);
    expect(retryDelayMs(p, 2, 1_000)).toBe(2_000);
    expect(retryDelayMs(p, 3, 3_000)).toBeNull();
  });

  it('waits what Retry-After says, and moves on when that exceeds the wait budget', () => {
    expect(retryDelayMs(DEFAULT_LLM_RETRY, 1, 0, 7_000)).toBe(7_000);
    expect(retryDelayMs(DEFAULT_LLM_RETRY, 1, 0, 0)).toBe(0);
    expect(retryDelayMs(DEFAULT_LLM_RETRY, 1, 0, 61_000)).toBeNull();
    expect(retryDelayMs(DEFAULT_LLM_RETRY, 2, 50_000, 11_000)).toBeNull();
  });

  it(`never exceeds its bounds, whatever the provider says (seed ${SEED})`, () => {
    const policy = fc.record<LlmRetryPolicy>({
      triesPerClient: fc.integer({ min: 1, max: 10 }),
      maxWaitMs: fc.integer({ min: 0, max: 600_000 }),
      baseDelayMs: fc.integer({ min: 0, max: 100_000 }),
    });
    const retryAfter = fc.option(
      fc.oneof(fc.integer({ min: -1_000, max: 10_000_000 }), fc.constantFrom(NaN, Infinity, -Infinity)),
      { nil: undefined },
    );
    fc.assert(
      fc.property(policy, fc.array(retryAfter, { minLength: 20, maxLength: 20 }), (p, afters) => {
        let tries = 1;
        let waited = 0;
        for (const after of afters) {
          const d = retryDelayMs(p, tries, waited, after);
          if (d === null) break;
          expect(d).toBeGreaterThanOrEqual(0);
          waited += d;
          tries += 1;
        }
        expect(tries).toBeLessThanOrEqual(p.triesPerClient);
        expect(waited).toBeLessThanOrEqual(p.maxWaitMs);
      }),
      { seed: SEED, numRuns: 3_000 },
    );
  });
});

describe('a round retries a retriable error on the same client (fake clock)', () => {
  const one = [{ name: 'alpha', cacheControl: false }];

  it('a 429 with Retry-After on the only client is waited out and retried: the turn answers', async () => {
    const h = new LoopHarness({
      clients: one,
      script: [{ error: new LlmError('HTTP 429 rate limited', true, 2_500) }, { content: 'after the wait' }],
    });
    expect(await h.run('hi')).toMatchObject({ kind: 'final', content: 'after the wait' });
    expect(h.model.calls.map((c) => c.client)).toEqual(['alpha', 'alpha']);
    expect(h.clock.sleeps).toEqual([2_500]);
    expect(h.eventsOf('model_fallback')).toEqual([
      expect.objectContaining({ from: 'alpha', to: 'alpha', reason: 'HTTP 429 rate limited; try 2 of 3 in 2.5 s' }),
    ]);
    expect(h.eventsOf('llm_failed')).toHaveLength(0);
  });

  it('gives up on the only client after triesPerClient tries with exponential backoff, then llm_failed', async () => {
    const h = new LoopHarness({
      clients: one,
      script: [
        { error: new LlmError('HTTP 503', true) },
        { error: new LlmError('HTTP 503', true) },
        { error: new LlmError('HTTP 503 still', true) },
        { content: 'never' },
      ],
    });
    expect(await h.run('hi')).toEqual({ kind: 'failed', error: 'HTTP 503 still' });
    expect(h.model.calls).toHaveLength(3);
    expect(h.clock.sleeps).toEqual([1_000, 2_000]);
    expect(h.eventsOf('llm_failed')).toEqual([
      expect.objectContaining({ tried: ['alpha'], last_error: 'HTTP 503 still' }),
    ]);
  });

  it('the tries and the wait are configurable', async () => {
    const h = new LoopHarness({
      clients: one,
      config: { llmRetry: { triesPerClient: 5, maxWaitMs: 10_000, baseDelayMs: 100 } },
      script: [...Array.from({ length: 4 }, () => ({ error: new LlmError('reset', true) })), { content: 'fifth' }],
    });
    expect(await h.run('hi')).toMatchObject({ kind: 'final', content: 'fifth' });
    expect(h.clock.sleeps).toEqual([100, 200, 400, 800]);
  });

  it('then the next client: tries are counted per client', async () => {
    const h = new LoopHarness({
      clients: [...one, { name: 'beta', cacheControl: false }],
      script: [
        { error: new LlmError('HTTP 500', true) },
        { error: new LlmError('HTTP 500', true) },
        { error: new LlmError('HTTP 500', true) },
        { error: new LlmError('HTTP 502', true) },
        { content: 'beta answers' },
      ],
    });
    expect(await h.run('hi')).toMatchObject({ kind: 'final', content: 'beta answers' });
    expect(h.model.calls.map((c) => c.client)).toEqual(['alpha', 'alpha', 'alpha', 'beta', 'beta']);
    expect(h.eventsOf('model_fallback').map((e) => [e.from, e.to])).toEqual([
      ['alpha', 'alpha'],
      ['alpha', 'alpha'],
      ['alpha', 'beta'],
      ['beta', 'beta'],
    ]);
  });

  it('a Retry-After beyond the wait budget moves to the next client without waiting', async () => {
    const h = new LoopHarness({
      clients: [...one, { name: 'beta', cacheControl: false }],
      script: [{ error: new LlmError('HTTP 429', true, 3_600_000) }, { content: 'beta' }],
    });
    expect(await h.run('hi')).toMatchObject({ kind: 'final', content: 'beta' });
    expect(h.clock.sleeps).toEqual([]);
  });

  it('a non-retriable error is not retried', async () => {
    const h = new LoopHarness({ clients: one, script: [{ error: new LlmError('HTTP 401', false) }, { content: 'x' }] });
    expect(await h.run('hi')).toEqual({ kind: 'failed', error: 'HTTP 401' });
    expect(h.model.calls).toHaveLength(1);
    expect(h.clock.sleeps).toEqual([]);
  });

  it('a stop during the wait ends the turn as interrupted without another call', async () => {
    const h = new LoopHarness({
      clients: one,
      script: [{ error: new LlmError('HTTP 429', true, 30_000) }, { content: 'never' }],
    });
    const stop = new AbortController();
    h.clock.onSleep = () => stop.abort();
    expect(await h.run('hi', stop.signal)).toEqual({ kind: 'cancelled' });
    expect(h.model.calls).toHaveLength(1);
    expect(h.eventsOf('error')).toEqual([expect.objectContaining({ code: 'interrupted' })]);
  });
});
