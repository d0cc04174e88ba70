import { createHash } from 'node:crypto';
import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';
import ipaddr from 'ipaddr.js';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Logger } from '@skald/service-kit';
import { GATEWAY_CONFIG, GatewayConfig } from '../config';
import { ApiError } from '../http/api-error';
import { GATEWAY_LOGGER } from '../tokens';

const CONNECT_WAIT_MS = 3_000;

/** Who is trying: the account named (by email) and the client address. */
export interface LoginAttempt {
  email: string;
  address: string;
}

/**
 * Failed-login counters per account and per client address, in Redis so that every gateway
 * replica sees the same counts (rate-limiter-flexible, fixed window from the first failure).
 * While either is exhausted, logins for it answer 429 with Retry-After without checking the
 * password; when the window ends the owner logs in again. A success clears the account's count.
 * If Redis is unreachable each replica counts in memory instead (the insurance limiter), so
 * throttling weakens to per-replica but never switches off and logins keep working.
 */
@Injectable()
export class LoginThrottle implements OnModuleInit, OnApplicationShutdown {
  private readonly redis: Redis;
  private readonly account: RateLimiterRedis;
  private readonly address: RateLimiterRedis;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig, @Inject(GATEWAY_LOGGER) log: Logger) {
    this.redis = new Redis(config.REDIS_URL, {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      connectionName: 'skald-gateway-login-throttle',
      disconnectTimeout: 200,
    });
    let warned = false;
    this.redis.on('error', (e: Error) => {
      if (warned) return;
      warned = true;
      log.warn({ err: e.message }, 'login throttle: Redis unreachable; counting failed logins per replica');
    });
    this.redis.on('ready', () => (warned = false));
    const limiter = (name: string, points: number) =>
      new RateLimiterRedis({
        storeClient: this.redis,
        keyPrefix: `${config.SKALD_LOGIN_LIMIT_PREFIX}${name}`,
        points,
        duration: config.SKALD_LOGIN_WINDOW_SECS,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory({ points, duration: config.SKALD_LOGIN_WINDOW_SECS }),
      });
    this.account = limiter('account', config.SKALD_LOGIN_MAX_FAILURES_PER_ACCOUNT);
    this.address = limiter('address', config.SKALD_LOGIN_MAX_FAILURES_PER_ADDRESS);
  }

  /** Connects before the gateway takes logins (so the first ones are counted in Redis), waiting at most 3 s. */
  async onModuleInit(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.redis.connect().catch(() => undefined),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, CONNECT_WAIT_MS))),
    ]);
    clearTimeout(timer);
  }

  /** Throws 429 (Retry-After: the rest of the window) when the account or the address has no failures left. */
  async check(attempt: LoginAttempt): Promise<void> {
    const [account, address] = await Promise.all([
      this.account.get(accountKey(attempt.email)),
      this.address.get(addressKey(attempt.address)),
    ]);
    const blocked = [
      exhausted(account, this.account.points) ? account : null,
      exhausted(address, this.address.points) ? address : null,
    ].filter((r): r is RateLimiterRes => r !== null);
    if (blocked.length === 0) return;
    const secs = Math.max(1, Math.ceil(Math.max(...blocked.map((r) => r.msBeforeNext)) / 1000));
    const who = exhausted(account, this.account.points) ? 'this account' : 'this address';
    throw new ApiError('rate_limited', `too many failed logins for ${who}; try again in ${secs} s`, undefined, secs);
  }

  /** Counts a failure against both the account and the address. */
  async failed(attempt: LoginAttempt): Promise<void> {
    // `consume` (not `penalty`) so that a Redis failure falls back to the insurance limiter.
    const count = (p: Promise<RateLimiterRes>) =>
      p.then(
        () => undefined,
        (e: unknown) => {
          if (!(e instanceof RateLimiterRes)) throw e;
        },
      );
    await Promise.all([
      count(this.account.consume(accountKey(attempt.email))),
      count(this.address.consume(addressKey(attempt.address))),
    ]);
  }

  /** The owner proved the password: the account's failures are forgotten (the address's are not). */
  async succeeded(attempt: LoginAttempt): Promise<void> {
    await this.account.delete(accountKey(attempt.email));
  }

  onApplicationShutdown(): void {
    this.redis.disconnect();
  }
}

function exhausted(r: RateLimiterRes | null, points: number): r is RateLimiterRes {
  return r !== null && r.consumedPoints >= points && r.msBeforeNext > 0;
}

/** Accounts are keyed by a hash of the lower-cased email: no address book in Redis. */
function accountKey(email: string): string {
  return createHash('sha256').update(email.trim().toLowerCase()).digest('base64url');
}

/**
 * The unit an address is counted by: an IPv4 address (IPv4-mapped IPv6 included), or the /64 of an
 * IPv6 address, since one subscriber commonly holds a whole /64 and could rotate through it.
 */
export function addressKey(address: string): string {
  if (!ipaddr.isValid(address)) return `other:${address.slice(0, 100)}`;
  const ip = ipaddr.process(address);
  if (ip.kind() === 'ipv4') return ip.toString();
  return `${(ip as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((p) => p.toString(16))
    .join(':')}::/64`;
}
