import { LoopHarness } from '@skald/agent-loop/testing';
import { LlmManager, resolveLlmClients } from '@skald/llm';
import { simFail, startLlmSim, type LlmSim } from '@skald/testing';
import { LlmAdapter } from './llm-adapter';

/**
 * The loop's retry and fallback through the real LLM port, the real OpenAI client and llm-sim
 * speaking the OpenAI wire protocol; waits run on the real clock.
 */
describe('LLM resilience against llm-sim', () => {
  let sim: LlmSim;

  beforeAll(async () => {
    sim = await startLlmSim();
  });
  beforeEach(() => sim.reset());
  afterAll(() => sim.close());

  const harness = (names: string[], retry: { triesPerClient?: number; maxWaitMs?: number } = {}) => {
    const manager = new LlmManager(
      resolveLlmClients(
        names.map((name) => ({
          name,
          baseUrl: sim.url,
          model: 'sim-model',
          apiKey: 'sk-sim-resilience-0123456789',
          strength: 'high' as const,
          timeoutMs: 1_500,
        })),
        {},
      ),
    );
    const h = new LoopHarness({
      config: { llmRetry: { triesPerClient: 3, maxWaitMs: 60_000, baseDelayMs: 50, ...retry } },
    });
    h.deps = {
      ...h.deps,
      llm: new LlmAdapter(manager),
      clock: { now: () => new Date(), timeZone: () => 'UTC' },
    };
    return h;
  };

  it('a 429 with Retry-After on the only client is waited out (the header honoured) and the turn answers', async () => {
    sim.reply(simFail.rateLimited(1), { content: 'answered after the wait' });
    const h = harness(['only']);
    const started = Date.now();
    expect(await h.run('hi')).toMatchObject({ kind: 'final', content: 'answered after the wait' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(sim.requests()).toHaveLength(2);
    expect(h.eventsOf('model_fallback')).toEqual([
      expect.objectContaining({ from: 'only', to: 'only', reason: expect.stringContaining('try 2 of 3 in 1 s') }),
    ]);
  });

  it('a 503, a connection reset and a timeout are each retried on the same client', async () => {
    sim.reply(simFail.serverError(503), simFail.drop(), { content: 'third time lucky' });
    const h = harness(['only']);
    expect(await h.run('hi')).toMatchObject({ kind: 'final', content: 'third time lucky' });
    expect(sim.requests()).toHaveLength(3);

    sim.reset();
    sim.reply(simFail.timeout(), { content: 'after a timeout' });
    const t = harness(['only']);
    expect(await t.run('hi')).toMatchObject({ kind: 'final', content: 'after a timeout' });
  });

  it('after the same client tries, the next client; when none is left, llm_failed naming each', async () => {
    sim.reply(simFail.serverError(500), simFail.serverError(500), { content: 'from the second client' });
    const h = harness(['first', 'second'], { triesPerClient: 2 });
    expect(await h.run('hi')).toMatchObject({ kind: 'final', content: 'from the second client' });
    expect(h.eventsOf('model_fallback').map((e) => [e.from, e.to])).toEqual([
      ['first', 'first'],
      ['first', 'second'],
    ]);

    sim.reset();
    sim.reply(...Array.from({ length: 4 }, () => simFail.serverError(502)));
    const f = harness(['first', 'second'], { triesPerClient: 2 });
    expect(await f.run('hi')).toMatchObject({ kind: 'failed' });
    expect(sim.requests()).toHaveLength(4);
    expect(f.eventsOf('llm_failed')).toEqual([expect.objectContaining({ tried: ['first', 'second'] })]);
    expect(f.eventsOf('error')).toEqual([expect.objectContaining({ code: 'llm_failed' })]);
  });

  it('a stop during a Retry-After wait ends the turn at once, without another request', async () => {
    sim.reply(simFail.rateLimited(30), { content: 'never' });
    const h = harness(['only']);
    const stop = new AbortController();
    const started = Date.now();
    const run = h.run('hi', stop.signal);
    await sim.waitForRequest(() => true);
    setTimeout(() => stop.abort(), 200);
    expect(await run).toEqual({ kind: 'cancelled' });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(sim.requests()).toHaveLength(1);
    expect(h.eventsOf('error')).toEqual([expect.objectContaining({ code: 'interrupted' })]);
  });
});
