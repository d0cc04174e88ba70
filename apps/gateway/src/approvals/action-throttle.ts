import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { GATEWAY_CONFIG, GatewayConfig } from '../config';
import { ApiError } from '../http/api-error';
import { addressKey } from '../auth/login-address';

/** An attempt counted before its token was looked at. */
export interface CountedAction {
  readonly key: string;
}

/**
 * Throttling of `POST /api/approvals/actions`, the public route a push notification's Approve and
 * Reject call: like a login, every attempt is counted per client address before its token is
 * looked up (Redis, shared by the replicas; in memory per replica while Redis is away), a
 * redemption that worked is refunded, so only failures add up: a guesser gets
 * `SKALD_LOGIN_MAX_FAILURES_PER_ADDRESS` tries per `SKALD_LOGIN_WINDOW_SECS`, then 429.
 */
@Injectable()
export class ActionThrottle implements OnApplicationShutdown {
  private readonly redis: Redis;
  private readonly limiter: RateLimiterRedis;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    this.redis = new Redis(config.REDIS_URL, {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      connectionName: 'skald-gateway-action-throttle',
      disconnectTimeout: 200,
    });
    this.redis.on('error', () => undefined);
    const points = config.SKALD_LOGIN_MAX_FAILURES_PER_ADDRESS;
    const duration = config.SKALD_LOGIN_WINDOW_SECS;
    this.limiter = new RateLimiterRedis({
      storeClient: this.redis,
      keyPrefix: `${config.SKALD_LOGIN_LIMIT_PREFIX}action-address`,
      points,
      duration,
      rejectIfRedisNotReady: true,
      insuranceLimiter: new RateLimiterMemory({ points, duration }),
    });
  }

  /** Counts the attempt, or refuses it (429 with Retry-After) once the address used up its failures. */
  async begin(address: string): Promise<CountedAction> {
    const key = addressKey(address);
    try {
      await this.limiter.consume(key);
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) throw e;
      await this.limiter.reward(key).catch(() => undefined);
      const secs = Math.max(1, Math.ceil(e.msBeforeNext / 1000));
      throw new ApiError(
        'rate_limited',
        `too many failed notification actions from this address; try again in ${secs} s`,
        undefined,
        secs,
      );
    }
    return { key };
  }

  /** The token acted: the attempt is not a failure. */
  async succeeded(counted: CountedAction): Promise<void> {
    await this.limiter.reward(counted.key).catch(() => undefined);
  }

  onApplicationShutdown(): void {
    this.redis.disconnect();
  }
}
