import { InMemoryLlmHealthStore, type LlmHealth, type LlmHealthStore } from './llm-health';
import { ResilientLlmHealthStore } from './llm-health-resilient';

/** A shared store that can be switched off (throws) or made to hang. */
class FlakyStore implements LlmHealthStore {
  readonly inner = new InMemoryLlmHealthStore();
  state: 'up' | 'down' | 'hang' = 'up';
  calls = 0;

  private gate(): Promise<void> {
    this.calls++;
    if (this.state === 'down') return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379'));
    if (this.state === 'hang') return new Promise(() => undefined);
    return Promise.resolve();
  }
  async recordSuccess(name: string): Promise<void> {
    await this.gate();
    await this.inner.recordSuccess(name);
  }
  async recordFailure(name: string, error: string): Promise<void> {
    await this.gate();
    await this.inner.recordFailure(name, error);
  }
  async read(names: readonly string[]): Promise<Map<string, LlmHealth>> {
    await this.gate();
    return this.inner.read(names);
  }
}

describe('ResilientLlmHealthStore', () => {
  let clock = 0;
  const now = (): number => clock;
  beforeEach(() => {
    clock = 1_000;
  });

  it('reads the shared health, which other replicas wrote', async () => {
    const shared = new FlakyStore();
    const a = new ResilientLlmHealthStore(shared, { now });
    const b = new ResilientLlmHealthStore(shared, { now });
    for (let i = 0; i < 3; i++) await a.recordFailure('gpt', 'HTTP 503');
    expect((await b.read(['gpt'])).get('gpt')).toMatchObject({ state: 'degraded', consecutiveFailures: 3 });
    expect(b.mode()).toBe('shared');
  });

  it('never throws while the shared store is down: it judges on its own record and says so', async () => {
    const shared = new FlakyStore();
    const modes: string[] = [];
    const store = new ResilientLlmHealthStore(shared, { now, onModeChange: (m) => modes.push(m) });
    shared.state = 'down';
    for (let i = 0; i < 5; i++) await store.recordFailure('gpt', 'HTTP 503');
    expect((await store.read(['gpt'])).get('gpt')).toMatchObject({ state: 'down', consecutiveFailures: 5 });
    expect(store.mode()).toBe('local');
    expect(modes).toEqual(['local']);
    // While it is known to be down, the shared store is not even asked (no latency for callers).
    const calls = shared.calls;
    await store.read(['gpt']);
    expect(shared.calls).toBe(calls);
  });

  it('gives a hanging shared store only the timeout, then uses local health', async () => {
    const shared = new FlakyStore();
    shared.state = 'hang';
    const store = new ResilientLlmHealthStore(shared, { now, timeoutMs: 30 });
    const started = Date.now();
    await store.recordFailure('gpt', 'timeout');
    expect((await store.read(['gpt'])).get('gpt')?.consecutiveFailures).toBe(1);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(store.mode()).toBe('local');
  });

  it('goes back to the shared store after retryAfterMs', async () => {
    const shared = new FlakyStore();
    const modes: string[] = [];
    const store = new ResilientLlmHealthStore(shared, { now, retryAfterMs: 5_000, onModeChange: (m) => modes.push(m) });
    shared.state = 'down';
    await store.recordFailure('gpt', 'x');
    shared.state = 'up';
    await shared.inner.recordFailure('gpt', 'from another replica');
    clock += 1_000;
    expect((await store.read(['gpt'])).get('gpt')?.lastError).toBe('x');
    clock += 5_000;
    expect((await store.read(['gpt'])).get('gpt')?.lastError).toBe('from another replica');
    expect(modes).toEqual(['local', 'shared']);
  });
});
