import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { freePort } from '@skald/testing';
import type { GatewayConfig } from '../config';
import { ApiError } from '../http/api-error';
import { LoginThrottle } from './login-throttle';

const log = pino({ level: 'silent' });

function throttle(overrides: Partial<GatewayConfig>): LoginThrottle {
  const config = {
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    SKALD_LOGIN_LIMIT_PREFIX: `skald-it-${randomBytes(6).toString('hex')}:login:`,
    SKALD_LOGIN_MAX_FAILURES_PER_ACCOUNT: 3,
    SKALD_LOGIN_MAX_FAILURES_PER_ADDRESS: 5,
    SKALD_LOGIN_WINDOW_SECS: 60,
    ...overrides,
  } as GatewayConfig;
  return new LoginThrottle(config, log);
}

async function refusal(p: Promise<void>): Promise<ApiError | null> {
  try {
    await p;
    return null;
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
}

describe('login throttle', () => {
  const made: LoginThrottle[] = [];
  const make = async (o: Partial<GatewayConfig> = {}) => {
    const t = throttle(o);
    made.push(t);
    await t.onModuleInit();
    return t;
  };
  afterAll(() => made.forEach((t) => t.onApplicationShutdown()));

  it('two replicas share the counts through Redis; the email is matched case-insensitively', async () => {
    const prefix = `skald-it-${randomBytes(6).toString('hex')}:login:`;
    const [a, b] = [await make({ SKALD_LOGIN_LIMIT_PREFIX: prefix }), await make({ SKALD_LOGIN_LIMIT_PREFIX: prefix })];
    await a.failed({ email: 'Alice@Example.com', address: '10.0.0.1' });
    await b.failed({ email: 'alice@example.com', address: '10.0.0.2' });
    expect(await refusal(a.check({ email: 'alice@example.com', address: '10.0.0.3' }))).toBeNull();
    await a.failed({ email: 'ALICE@example.com', address: '10.0.0.4' });
    const e = await refusal(b.check({ email: 'alice@example.com', address: '10.0.0.5' }));
    expect(e).toMatchObject({ code: 'rate_limited', status: 429 });
    expect(e?.retryAfterSecs).toBeGreaterThanOrEqual(59);
    expect(e?.retryAfterSecs).toBeLessThanOrEqual(60);
    // another account from a fresh address is untouched
    expect(await refusal(b.check({ email: 'bob@example.com', address: '10.0.0.6' }))).toBeNull();
    // a success clears the account (not the address)
    await a.succeeded({ email: 'alice@example.com', address: '10.0.0.5' });
    expect(await refusal(b.check({ email: 'alice@example.com', address: '10.0.0.7' }))).toBeNull();
  });

  it('with Redis unreachable it still throttles (per replica) and answers at once', async () => {
    const t = await make({ REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    const attempt = { email: 'carol@example.com', address: '10.0.0.9' };
    const started = Date.now();
    for (let i = 0; i < 3; i++) {
      expect(await refusal(t.check(attempt))).toBeNull();
      await t.failed(attempt);
    }
    expect(await refusal(t.check(attempt))).toMatchObject({ code: 'rate_limited' });
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
