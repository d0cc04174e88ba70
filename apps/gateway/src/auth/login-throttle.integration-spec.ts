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
    SKALD_LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS: 3,
    SKALD_LOGIN_MAX_FAILURES_PER_ADDRESS: 5,
    SKALD_LOGIN_MAX_FAILURES_PER_ACCOUNT: 8,
    SKALD_LOGIN_WINDOW_SECS: 60,
    SKALD_OIDC_MAX_FLOWS_PER_ADDRESS: 50,
    ...overrides,
  } as GatewayConfig;
  return new LoginThrottle(config, log);
}

async function refusal(p: Promise<unknown>): Promise<ApiError | null> {
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

  it('100 concurrent attempts at one account from one address on two replicas: exactly the limit pass, the rest are refused and refunded', async () => {
    const prefix = `skald-it-${randomBytes(6).toString('hex')}:login:`;
    const [a, b] = [await make({ SKALD_LOGIN_LIMIT_PREFIX: prefix }), await make({ SKALD_LOGIN_LIMIT_PREFIX: prefix })];
    const outcomes = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        refusal(
          (i % 2 ? a : b).begin({ email: i % 3 ? 'Alice@Example.com' : 'alice@example.com', address: '10.0.0.1' }),
        ),
      ),
    );
    // at most the limit pass (a burst may be refused a little more: its in-flight increments count until refunded)
    const passed = outcomes.filter((o) => o === null).length;
    expect(passed).toBeGreaterThanOrEqual(1);
    expect(passed).toBeLessThanOrEqual(3);
    for (const o of outcomes.filter((x) => x !== null)) {
      expect(o).toMatchObject({ code: 'rate_limited', status: 429 });
      // the pair is what is used up; while the burst is in flight the others may read as used up too
      expect(o?.message).toMatch(
        /^too many failed logins (to this account from this address|from this address|to this account);/,
      );
      expect(o?.retryAfterSecs).toBeGreaterThanOrEqual(59);
    }
    // the refused ones were taken back: the address has `passed` of its 5 used, the account `passed` of its 8
    const until = async (next: (i: number) => Promise<ApiError | null>) => {
      for (let i = 0; i < 20; i++) {
        const e = await next(i);
        if (e) return { allowed: i, refusal: e };
      }
      throw new Error('never refused');
    };
    const address = await until((i) =>
      refusal((i % 2 ? a : b).begin({ email: `u${i}@example.com`, address: '10.0.0.1' })),
    );
    expect(address.allowed).toBe(5 - passed);
    expect(address.refusal.message).toMatch(/^too many failed logins from this address;/);
    // the owner from elsewhere: the account has room up to its ceiling (8), which then locks every address
    const account = await until((i) =>
      refusal((i % 2 ? a : b).begin({ email: 'alice@example.com', address: `10.1.0.${i}` })),
    );
    expect(account.allowed).toBe(8 - passed);
    expect(account.refusal.message).toMatch(/^too many failed logins to this account;/);
  });

  it('a success clears the pair and refunds the attempt on the address and account; an unchecked attempt is refunded everywhere', async () => {
    const t = await make();
    const attempt = { email: 'erin@example.com', address: '10.0.0.2' };
    for (let i = 0; i < 2; i++) await t.begin(attempt);
    await t.succeeded(await t.begin(attempt));
    // the pair starts again: 3 more
    for (let i = 0; i < 3; i++) expect(await refusal(t.begin(attempt))).toBeNull();
    expect(await refusal(t.begin(attempt))).toMatchObject({ code: 'rate_limited' });
    // the address counted 2 + 3 failures (the success and refusal refunded): full
    expect(await refusal(t.begin({ email: 'frank@example.com', address: '10.0.0.2' }))).toMatchObject({
      code: 'rate_limited',
    });
    const other = { email: 'grace@example.com', address: '10.0.0.3' };
    for (let i = 0; i < 10; i++) await t.notChecked(await t.begin(other));
    expect(await refusal(t.begin(other))).toBeNull();
  });

  it('a refund after the window ended leaves no credit for the next window', async () => {
    const t = await make({ SKALD_LOGIN_WINDOW_SECS: 1 });
    const attempt = { email: 'heidi@example.com', address: '10.0.0.4' };
    const counted = await Promise.all([t.begin(attempt), t.begin(attempt), t.begin(attempt)]);
    await new Promise((r) => setTimeout(r, 1_100));
    for (const c of counted) await t.notChecked(c);
    for (let i = 0; i < 3; i++) expect(await refusal(t.begin(attempt))).toBeNull();
    expect(await refusal(t.begin(attempt))).toMatchObject({ code: 'rate_limited' });
  });

  it('with Redis unreachable it still throttles (per replica) and answers at once', async () => {
    const t = await make({ REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    const attempt = { email: 'carol@example.com', address: '10.0.0.9' };
    const started = Date.now();
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => refusal(t.begin(attempt))));
    expect(outcomes.filter((o) => o === null)).toHaveLength(3);
    expect(await refusal(t.begin(attempt))).toMatchObject({ code: 'rate_limited' });
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
