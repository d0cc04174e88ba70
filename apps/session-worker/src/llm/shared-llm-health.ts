import Redis from 'ioredis';
import { CachedLlmHealthStore, ResilientLlmHealthStore, ThrottledLlmHealthStore } from '@skald/llm';
import type { Logger } from '@skald/service-kit';
import type { WorkerConfig } from '../config';
import { RedisLlmHealthStore } from './redis-llm-health.store';

/**
 * LLM health shared by the worker replicas through Redis, falling back to this process's own
 * record while Redis is unreachable (logged once each way). A success is written only when it
 * changes the record or refreshes it (`ThrottledLlmHealthStore`), and read at most once per
 * `SKALD_LLM_HEALTH_CACHE_MS` (`CachedLlmHealthStore`: the health is asked before every model call;
 * another replica's change is seen within that bound, this worker's own at once). Redis is optional
 * for the worker: it starts, stays ready and runs turns without it.
 */
export function sharedLlmHealth(
  config: Pick<
    WorkerConfig,
    'REDIS_URL' | 'SKALD_LLM_HEALTH_PREFIX' | 'SKALD_LLM_HEALTH_TTL_S' | 'SKALD_LLM_HEALTH_CACHE_MS'
  >,
  log: Pick<Logger, 'info' | 'warn'>,
  /** Longest wait for Redis before this worker judges on its own calls (a test on a loaded machine waits longer). */
  sharedTimeoutMs = 500,
): { health: ThrottledLlmHealthStore; close: () => Promise<void> } {
  const redis = new Redis(config.REDIS_URL, {
    lazyConnect: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    // Keep trying to reconnect (capped at 2 s apart): health goes back to shared by itself.
    retryStrategy: (times) => Math.min(2_000, 100 * times),
  });
  redis.on('error', () => undefined);
  const resilient = new ResilientLlmHealthStore(
    new RedisLlmHealthStore(redis, config.SKALD_LLM_HEALTH_PREFIX, config.SKALD_LLM_HEALTH_TTL_S),
    {
      timeoutMs: sharedTimeoutMs,
      retryAfterMs: 5_000,
      onModeChange: (mode, reason) =>
        mode === 'local'
          ? log.warn({ reason }, "LLM health store (Redis) unavailable: judging clients on this worker's own calls")
          : log.info({}, 'LLM health store (Redis) reachable again: health is shared'),
    },
  );
  // A success is written (to Redis, and to the local fallback) when it changes the record, or to
  // refresh it at most every 10 s (well within the record's time to live), not after every call.
  const cached = new CachedLlmHealthStore(resilient, { maxAgeMs: config.SKALD_LLM_HEALTH_CACHE_MS });
  const health = new ThrottledLlmHealthStore(cached, {
    refreshMs: Math.min(10_000, (config.SKALD_LLM_HEALTH_TTL_S * 1000) / 2),
  });
  return {
    health,
    close: () =>
      redis.quit().then(
        () => undefined,
        () => redis.disconnect(),
      ),
  };
}
