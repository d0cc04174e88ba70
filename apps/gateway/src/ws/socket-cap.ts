import { randomUUID } from 'node:crypto';
import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';
import type { Logger } from '@skald/service-kit';
import { GATEWAY_CONFIG, GatewayConfig } from '../config';
import { GATEWAY_LOGGER } from '../tokens';

const CONNECT_WAIT_MS = 3_000;

/**
 * Takes a place for one socket of a user, atomically: drops the user's places whose lease ran out
 * (a replica that died), refuses at the cap, else adds this one with its lease. The clock is the
 * Redis server's, so replicas' clocks do not matter. Answers {taken (1/0), places held after}.
 */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[2]) then return {0, n} end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
return {1, n + 1}`;

/** Renews the leases of places this replica holds (only those still there: XX). */
const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, #ARGV - 1 do
  redis.call('ZADD', KEYS[i], 'XX', now + tonumber(ARGV[#ARGV]), ARGV[i])
  redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[#ARGV]) * 2)
end
return #ARGV - 1`;

/** Counts the user's places whose lease has not run out (the clock is the Redis server's). */
const LIVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')`;

export type SocketPlace = { taken: true; release: () => void } | { taken: false; have: number };

/**
 * The per-user cap on open WebSocket connections (`SKALD_MAX_SOCKETS_PER_USER`) across every
 * gateway replica: a sorted set per user in Redis, one member per socket scored by its lease's end,
 * taken by one script (no check-then-add race), renewed by the replica that holds it every third
 * of `SKALD_WS_SOCKET_LEASE_MS`, removed when the socket closes; a replica that dies loses its
 * places within one lease. With Redis unreachable each replica counts its own sockets instead (the
 * cap weakens to per replica, never switches off, and sockets keep opening).
 */
@Injectable()
export class SocketCap implements OnModuleInit, OnApplicationShutdown {
  private readonly redis: Redis;
  private readonly held = new Map<string, string>(); // member → key
  private readonly local = new Map<string, number>();
  private readonly renewTimer: NodeJS.Timeout;
  readonly cap: number;
  private readonly leaseMs: number;
  private readonly prefix: string;

  constructor(
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    @Inject(GATEWAY_LOGGER) private readonly log: Logger,
  ) {
    this.cap = config.SKALD_MAX_SOCKETS_PER_USER;
    this.leaseMs = config.SKALD_WS_SOCKET_LEASE_MS;
    this.prefix = `${config.SKALD_LOGIN_LIMIT_PREFIX}sockets:`;
    this.redis = new Redis(config.REDIS_URL, {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      connectionName: 'skald-gateway-socket-cap',
      disconnectTimeout: 200,
    });
    let warned = false;
    this.redis.on('error', (e: Error) => {
      if (warned) return;
      warned = true;
      log.warn({ err: e.message }, 'socket cap: Redis unreachable; counting sockets per replica');
    });
    this.redis.on('ready', () => (warned = false));
    this.renewTimer = setInterval(() => void this.renew(), Math.max(100, Math.floor(this.leaseMs / 3)));
    this.renewTimer.unref();
  }

  async onModuleInit(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.redis.connect().catch(() => undefined),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, CONNECT_WAIT_MS))),
    ]);
    clearTimeout(timer);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.renewTimer);
    const members = [...this.held.entries()];
    this.held.clear();
    if (members.length > 0 && this.redis.status === 'ready')
      await Promise.all(members.map(([m, k]) => this.redis.zrem(k, m))).catch(() => undefined);
    this.redis.disconnect();
  }

  /** A place for one more socket of the user, or how many they hold at the cap. */
  async take(userId: string): Promise<SocketPlace> {
    const key = `${this.prefix}${userId}`;
    const member = randomUUID();
    if (this.redis.status === 'ready') {
      try {
        const [ok, have] = (await this.redis.eval(TAKE, 1, key, member, this.cap, this.leaseMs)) as [number, number];
        if (ok !== 1) return { taken: false, have };
        this.held.set(member, key);
        let released = false;
        return {
          taken: true,
          release: () => {
            if (released) return;
            released = true;
            this.held.delete(member);
            void this.redis.zrem(key, member).catch(() => undefined);
          },
        };
      } catch (e) {
        this.log.warn({ err: String(e) }, 'socket cap: Redis failed; counting this socket per replica');
      }
    }
    const have = this.local.get(userId) ?? 0;
    if (have >= this.cap) return { taken: false, have };
    this.local.set(userId, have + 1);
    let released = false;
    return {
      taken: true,
      release: () => {
        if (released) return;
        released = true;
        const n = (this.local.get(userId) ?? 1) - 1;
        if (n <= 0) this.local.delete(userId);
        else this.local.set(userId, n);
      },
    };
  }

  /**
   * Whether the user has a socket open on any replica (presence, for `turn_finished`): one held
   * here answers at once; else the places in Redis whose lease still runs. Throws when Redis
   * cannot say (the asker treats the user as away: a notice too many beats one missed).
   */
  async online(userId: string): Promise<boolean> {
    const key = `${this.prefix}${userId}`;
    if ((this.local.get(userId) ?? 0) > 0) return true;
    for (const k of this.held.values()) if (k === key) return true;
    if (this.redis.status !== 'ready') throw new Error('socket places unreadable: Redis is not ready');
    return ((await this.redis.eval(LIVE, 1, key)) as number) > 0;
  }

  private async renew(): Promise<void> {
    if (this.held.size === 0 || this.redis.status !== 'ready') return;
    const entries = [...this.held.entries()];
    // Bounded batches: one script call renews at most 500 places.
    for (let i = 0; i < entries.length; i += 500) {
      const batch = entries.slice(i, i + 500);
      await this.redis
        .eval(RENEW, batch.length, ...batch.map(([, k]) => k), ...batch.map(([m]) => m), this.leaseMs)
        .catch(() => undefined);
    }
  }
}
