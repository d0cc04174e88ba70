import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';

/**
 * The scheduler's Redis connection (BullMQ's home). Cron jobs, async tasks and the BullMQ queues
 * that mirror them land with the scheduler work (issue 8); this skeleton connects and reports
 * readiness so that the stack's health is true from the first day.
 */
@Injectable()
export class RedisConnection implements OnApplicationShutdown {
  readonly client: Redis;

  constructor(url: string) {
    this.client = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: false });
    this.client.on('error', () => undefined);
  }

  async ping(): Promise<void> {
    if ((await this.client.ping()) !== 'PONG') throw new Error('Redis did not answer PONG');
  }

  async onApplicationShutdown(): Promise<void> {
    await this.client.quit().catch(() => this.client.disconnect());
  }
}
