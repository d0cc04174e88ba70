import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';

/** BullMQ needs a Redis that never evicts its keys; anything else loses schedules silently. */
export class RedisEvictionPolicyError extends Error {
  constructor(policy: string) {
    super(
      `Redis maxmemory-policy is \`${policy}\`; the scheduler needs \`noeviction\` (BullMQ keys must never be evicted)`,
    );
    this.name = 'RedisEvictionPolicyError';
  }
}

/** Reads the eviction policy (CONFIG GET, or INFO memory where CONFIG is disabled). */
export async function evictionPolicy(client: Redis): Promise<string> {
  try {
    const r = (await client.config('GET', 'maxmemory-policy')) as string[];
    if (r[1]) return r[1];
  } catch {
    // CONFIG may be renamed away on managed Redis
  }
  const info = await client.info('memory');
  return /maxmemory_policy:(\S+)/.exec(info)?.[1] ?? 'unknown';
}

export async function assertNoEviction(client: Redis): Promise<void> {
  const policy = await evictionPolicy(client);
  if (policy !== 'noeviction') throw new RedisEvictionPolicyError(policy);
}

/**
 * The scheduler's Redis connections (BullMQ's home): one for readiness and the start-up check,
 * and a factory for BullMQ (which needs `maxRetriesPerRequest: null`).
 */
@Injectable()
export class RedisConnection implements OnApplicationShutdown {
  readonly client: Redis;
  private readonly made: Redis[] = [];

  constructor(private readonly url: string) {
    this.client = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: false });
    this.client.on('error', () => undefined);
  }

  async ping(): Promise<void> {
    if ((await this.client.ping()) !== 'PONG') throw new Error('Redis did not answer PONG');
  }

  /** A new connection for BullMQ. */
  bullConnection(): Redis {
    const c = new Redis(this.url, { maxRetriesPerRequest: null });
    c.on('error', () => undefined);
    this.made.push(c);
    return c;
  }

  async onApplicationShutdown(): Promise<void> {
    for (const c of this.made) c.disconnect();
    await this.client.quit().catch(() => this.client.disconnect());
  }
}
