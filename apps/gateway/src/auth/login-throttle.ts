import { createHash } from 'node:crypto';
import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Logger } from '@skald/service-kit';
import { GATEWAY_CONFIG, GatewayConfig } from '../config';
import { ApiError } from '../http/api-error';
import { addressKey } from './login-address';
import { GATEWAY_LOGGER } from '../tokens';

const CONNECT_WAIT_MS = 3_000;
const SIGN_IN_START_WINDOW_SECS = 60;

/** Who is trying: the account named (by email) and the client address. */
export interface LoginAttempt {
  email: string;
  address: string;
}

/** An attempt already counted against every limit, to be settled once its password was checked (or not). */
export interface CountedAttempt {
  readonly attempt: LoginAttempt;
  readonly keys: Readonly<Record<LimitName, string>>;
}

type LimitName = 'pair' | 'address' | 'account';
const LIMITS: readonly LimitName[] = ['pair', 'address', 'account'];

/** What a refusal names, per limit exhausted. */
const REFUSAL: Record<LimitName, string> = {
  pair: 'too many failed logins to this account from this address',
  address: 'too many failed logins from this address',
  account: 'too many failed logins to this account',
};

/**
 * rate-limiter-flexible's increment script (its `customIncrTtlLuaScript` option), except that a
 * count never drops below 0: a refund that lands after its window ended (the key gone) must not
 * leave credit for the next window. Atomic in Redis like the original.
 */
const INCR_TTL_NOT_BELOW_ZERO = `redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX') \
local consumed = redis.call('incrby', KEYS[1], ARGV[1]) \
if consumed < 0 then \
  consumed = redis.call('incrby', KEYS[1], -consumed) \
end \
local ttl = redis.call('pttl', KEYS[1]) \
if ttl == -1 then \
  redis.call('expire', KEYS[1], ARGV[2]) \
  ttl = 1000 * ARGV[2] \
end \
return {consumed, ttl} \
`;

/**
 * Login throttling (OWASP Authentication Cheat Sheet): failures are counted per account + client
 * address pair (`SKALD_LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS`), per address whatever the account
 * (`…_PER_ADDRESS`), and per account whatever the address, as a far higher ceiling (`…_PER_ACCOUNT`),
 * so an attacker locks their own address out of an account while its owner elsewhere still logs in.
 *
 * Every attempt is counted before its password is checked (`begin`: an atomic increment in Redis on
 * each counter, shared by every gateway replica), and the counts that pass are the only ones that
 * reach the hash: N concurrent guesses against a limit L reach the password check at most L times.
 * An attempt refused by any limit is refunded on all of them, as is one that was not checked at all
 * (`notChecked`, every hashing slot busy); a success (`succeeded`) clears the pair's count and
 * refunds the attempt on the address and the account (whose other failures stay counted). Counts
 * live for a fixed window from the first failure (`SKALD_LOGIN_WINDOW_SECS`). If Redis is
 * unreachable each replica counts in memory instead (the insurance limiter), so throttling weakens
 * to per-replica but never switches off and logins keep working.
 */
@Injectable()
export class LoginThrottle implements OnModuleInit, OnApplicationShutdown {
  private readonly redis: Redis;
  private readonly limiters: Record<LimitName, RateLimiterRedis>;
  /** Single sign-ons started per client address and minute (every start counts: it writes a row). */
  private readonly signInStarts: RateLimiterRedis;

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
        customIncrTtlLuaScript: INCR_TTL_NOT_BELOW_ZERO,
        insuranceLimiter: new RateLimiterMemory({ points, duration: config.SKALD_LOGIN_WINDOW_SECS }),
      });
    this.limiters = {
      // `account-ceiling`, not the former per-account limit's `account`: its counts are not read as this one's
      pair: limiter('account-address', config.SKALD_LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS),
      address: limiter('address', config.SKALD_LOGIN_MAX_FAILURES_PER_ADDRESS),
      account: limiter('account-ceiling', config.SKALD_LOGIN_MAX_FAILURES_PER_ACCOUNT),
    };
    this.signInStarts = new RateLimiterRedis({
      storeClient: this.redis,
      keyPrefix: `${config.SKALD_LOGIN_LIMIT_PREFIX}oidc-start`,
      points: config.SKALD_OIDC_MAX_FLOWS_PER_ADDRESS,
      duration: SIGN_IN_START_WINDOW_SECS,
      rejectIfRedisNotReady: true,
      // the limiters of one Redis client share one increment script: a limiter without it would replace it
      customIncrTtlLuaScript: INCR_TTL_NOT_BELOW_ZERO,
      insuranceLimiter: new RateLimiterMemory({
        points: config.SKALD_OIDC_MAX_FLOWS_PER_ADDRESS,
        duration: SIGN_IN_START_WINDOW_SECS,
      }),
    });
  }

  /**
   * Counts a single sign-on started from this address (shared by every replica through Redis, per replica when
   * Redis is away); 429 with Retry-After when the address started `SKALD_OIDC_MAX_FLOWS_PER_ADDRESS` this minute.
   */
  async countSignInStart(address: string): Promise<void> {
    try {
      await this.signInStarts.consume(addressKey(address));
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) throw e;
      const secs = Math.max(1, Math.ceil(e.msBeforeNext / 1000));
      throw new ApiError(
        'rate_limited',
        `too many sign-ins started from this address; try again in ${secs} s`,
        undefined,
        secs,
      );
    }
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

  /**
   * Counts the attempt on every limit, atomically, before any password is checked. When a limit
   * was already used up the attempt is refunded everywhere and refused: 429 with Retry-After (the
   * rest of the longest window concerned), naming the narrowest limit refused. While concurrent
   * attempts are in flight a counter may briefly read higher than it will settle at (their
   * increments land before their refunds), so a burst may be refused a little more than its
   * limits say, and a refusal may name a limit that is not used up once the burst settles;
   * never fewer refusals.
   */
  async begin(attempt: LoginAttempt): Promise<CountedAttempt> {
    const account = accountKey(attempt.email);
    const keys = { pair: `${account}@${addressKey(attempt.address)}`, address: addressKey(attempt.address), account };
    const outcomes = await Promise.allSettled(LIMITS.map((l) => this.limiters[l].consume(keys[l])));
    const refused = LIMITS.flatMap((l, i) => {
      const o = outcomes[i];
      return o.status === 'rejected' && o.reason instanceof RateLimiterRes ? [{ limit: l, res: o.reason }] : [];
    });
    const failed = outcomes.find(
      (o): o is PromiseRejectedResult => o.status === 'rejected' && !(o.reason instanceof RateLimiterRes),
    );
    const counted: CountedAttempt = { attempt, keys };
    if (refused.length === 0 && !failed) return counted;
    // every increment happened, the refused ones included: take them all back
    await this.refund(counted, LIMITS);
    if (failed) throw failed.reason;
    // Retry-After: the longest wait; the words: the narrowest limit refused (the pair, then the address, then the account)
    const secs = Math.max(1, Math.ceil(Math.max(...refused.map((r) => r.res.msBeforeNext)) / 1000));
    const named = LIMITS.find((l) => refused.some((r) => r.limit === l))!;
    throw new ApiError('rate_limited', `${REFUSAL[named]}; try again in ${secs} s`, undefined, secs);
  }

  /** The password was right: the pair's failures are forgotten, and this attempt is not a failure of the address or the account. */
  async succeeded(counted: CountedAttempt): Promise<void> {
    await Promise.all([this.limiters.pair.delete(counted.keys.pair), this.refund(counted, ['address', 'account'])]);
  }

  /** The password was never checked (no hashing slot free): the attempt is taken back on every limit. */
  async notChecked(counted: CountedAttempt): Promise<void> {
    await this.refund(counted, LIMITS);
  }

  private async refund(counted: CountedAttempt, limits: readonly LimitName[]): Promise<void> {
    // a refund that cannot be made leaves the count higher: the safe side
    await Promise.all(limits.map((l) => this.limiters[l].reward(counted.keys[l]).catch(() => undefined)));
  }

  onApplicationShutdown(): void {
    this.redis.disconnect();
  }
}

/** Accounts are keyed by a hash of the lower-cased email: no address book in Redis. */
function accountKey(email: string): string {
  return createHash('sha256').update(email.trim().toLowerCase()).digest('base64url');
}
