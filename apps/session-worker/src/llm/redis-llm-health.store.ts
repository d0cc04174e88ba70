import type Redis from 'ioredis';
import { healthStateFor, initialHealth, type LlmHealth, type LlmHealthStore } from '@skald/llm';

/**
 * LLM client health shared by every session-worker replica, in Redis: one hash per client
 * (`<prefix><name>`: failures, last_success_at, last_failure_at, last_error). A failure is one
 * atomic `HINCRBY` (so two replicas failing at once count two), a success resets the count; each
 * write renews the key's time to live, so a client nobody has called for that long is forgotten
 * (healthy again). Wrapped in `ResilientLlmHealthStore`, so Redis being down never fails a turn.
 */
export class RedisLlmHealthStore implements LlmHealthStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly ttlSeconds: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private key(name: string): string {
    return `${this.prefix}${name}`;
  }

  async recordSuccess(clientName: string): Promise<void> {
    const key = this.key(clientName);
    await this.redis
      .multi()
      .hset(key, 'failures', 0, 'last_success_at', this.now().toISOString())
      .hdel(key, 'last_error')
      .expire(key, this.ttlSeconds)
      .exec()
      .then(check);
  }

  async recordFailure(clientName: string, error: string): Promise<void> {
    const key = this.key(clientName);
    await this.redis
      .multi()
      .hincrby(key, 'failures', 1)
      .hset(key, 'last_failure_at', this.now().toISOString(), 'last_error', error.slice(0, 500))
      .expire(key, this.ttlSeconds)
      .exec()
      .then(check);
  }

  async read(clientNames: readonly string[]): Promise<Map<string, LlmHealth>> {
    const pipeline = this.redis.pipeline();
    for (const name of clientNames) pipeline.hgetall(this.key(name));
    const results = check(await pipeline.exec());
    const health = new Map<string, LlmHealth>();
    clientNames.forEach((name, i) => {
      const h = (results[i][1] ?? {}) as Record<string, string>;
      const failures = Number(h.failures ?? 0) || 0;
      health.set(name, {
        ...initialHealth(),
        state: healthStateFor(failures),
        consecutiveFailures: failures,
        lastSuccessAt: h.last_success_at ?? null,
        lastFailureAt: h.last_failure_at ?? null,
        lastError: h.last_error ?? null,
      });
    });
    return health;
  }
}

type ExecResult = Array<[Error | null, unknown]> | null;

function check(results: ExecResult): Array<[Error | null, unknown]> {
  if (!results) throw new Error('Redis transaction aborted');
  const failed = results.find(([err]) => err);
  if (failed?.[0]) throw failed[0];
  return results;
}
