import { healthStateFor, InMemoryLlmHealthStore } from './llm-health';

describe('LLM client health', () => {
  it('is healthy until 3 consecutive failures, degraded until 5, then down', () => {
    expect([0, 1, 2, 3, 4, 5, 9].map(healthStateFor)).toEqual([
      'healthy',
      'healthy',
      'healthy',
      'degraded',
      'degraded',
      'down',
      'down',
    ]);
  });

  it('tracks consecutive failures per client, and a success resets them', async () => {
    const store = new InMemoryLlmHealthStore(() => new Date('2030-01-01T00:00:00Z'));
    const states: string[] = [];
    for (let i = 0; i < 5; i++) {
      await store.recordFailure('a', `failure ${i + 1}`);
      states.push((await store.read(['a'])).get('a')?.state ?? '?');
    }
    expect(states).toEqual(['healthy', 'healthy', 'degraded', 'degraded', 'down']);
    const before = await store.read(['a', 'b']);
    expect(before.get('a')).toEqual({
      state: 'down',
      consecutiveFailures: 5,
      lastFailureAt: '2030-01-01T00:00:00.000Z',
      lastSuccessAt: null,
      lastError: 'failure 5',
    });
    expect(before.get('b')).toMatchObject({ state: 'healthy', consecutiveFailures: 0 });

    await store.recordSuccess('a');
    expect((await store.read(['a'])).get('a')).toMatchObject({
      state: 'healthy',
      consecutiveFailures: 0,
      lastError: null,
    });
    await store.recordFailure('a', 'again');
    expect((await store.read(['a'])).get('a')).toMatchObject({ state: 'healthy', consecutiveFailures: 1 });
  });
});
