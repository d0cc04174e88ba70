import { DEFAULT_LOOP_CONFIG } from '@skald/agent-loop';
import { WorkerConfigSchema } from '../config';
import { loopConfigOf } from './loop-config';

const host = { os: 'Linux', defaultWorkingDirectory: '/workspace' };

describe('loop config from the worker config', () => {
  it('fan-out width, sub-agent depth and LLM clients per round default to the loop defaults', () => {
    const c = loopConfigOf(WorkerConfigSchema.parse({}), host);
    expect(c.maxParallelCalls).toBe(DEFAULT_LOOP_CONFIG.maxParallelCalls);
    expect(c.maxDepth).toBe(DEFAULT_LOOP_CONFIG.maxDepth);
    expect(c.maxLlmAttempts).toBe(DEFAULT_LOOP_CONFIG.maxLlmAttempts);
  });

  it('an operator sets them through SKALD_MAX_PARALLEL_CALLS, SKALD_MAX_AGENT_DEPTH, SKALD_LLM_MAX_CLIENTS', () => {
    const c = loopConfigOf(
      WorkerConfigSchema.parse({
        SKALD_MAX_PARALLEL_CALLS: '1',
        SKALD_MAX_AGENT_DEPTH: '0',
        SKALD_LLM_MAX_CLIENTS: '6',
      }),
      host,
    );
    expect(c).toMatchObject({ maxParallelCalls: 1, maxDepth: 0, maxLlmAttempts: 6 });
  });

  it.each([
    ['SKALD_MAX_PARALLEL_CALLS', '0'],
    ['SKALD_MAX_PARALLEL_CALLS', '33'],
    ['SKALD_MAX_AGENT_DEPTH', '-1'],
    ['SKALD_MAX_AGENT_DEPTH', '11'],
    ['SKALD_LLM_MAX_CLIENTS', '0'],
    ['SKALD_LLM_MAX_CLIENTS', '11'],
  ])('%s=%s is refused at start', (name, value) => {
    expect(WorkerConfigSchema.safeParse({ [name]: value }).success).toBe(false);
  });

  it('keeps the settings it already had', () => {
    const c = loopConfigOf(WorkerConfigSchema.parse({ SKALD_MAX_TOOL_ROUNDS: '7', SKALD_LLM_RETRY_TRIES: '2' }), host);
    expect(c).toMatchObject({ maxToolRounds: 7, os: 'Linux', defaultWorkingDirectory: '/workspace' });
    expect(c.llmRetry.triesPerClient).toBe(2);
  });
});
