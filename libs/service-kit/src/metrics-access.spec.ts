import fc from 'fast-check';
import { BaseConfigSchema } from './config';
import { metricsAccessOf, metricsGuard, MetricsAccess, MetricsRequest } from './metrics-access';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const TOKEN = 'scrape-token-0123456789abcdefghijklmnopqrstuv';
const remote = { remoteAddress: '10.1.2.3' };
const bearer = (t: string) => ({ headers: { authorization: `Bearer ${t}` }, socket: remote });

/** The guard as OpsModule uses it, with `check(req)` for the cases below. */
const makeGuard = (access: MetricsAccess) => {
  const check = metricsGuard(access);
  return { check: (req: MetricsRequest) => check(req) };
};

const LOOPBACKS = ['127.0.0.1', '::1', '::ffff:127.0.0.1'];

describe("every app's /metrics guard (service-kit)", () => {
  it('a loopback peer without a token is refused unless SKALD_METRICS_TRUST_LOOPBACK is on; with the token it is let in', async () => {
    for (const trustLoopback of [false, true]) {
      const guard = makeGuard({ token: TOKEN, trustLoopback });
      for (const remoteAddress of LOOPBACKS) {
        expect(await guard.check({ headers: {}, socket: { remoteAddress } })).toBe(trustLoopback);
        expect(await guard.check({ headers: { authorization: 'Bearer wrong' }, socket: { remoteAddress } })).toBe(
          trustLoopback,
        );
        expect(await guard.check({ ...bearer(TOKEN), socket: { remoteAddress } })).toBe(true);
      }
      // trusting loopback never trusts another peer
      expect(await guard.check({ headers: {}, socket: remote })).toBe(false);
      expect(await guard.check({ headers: {}, socket: { remoteAddress: '127.0.0.2.evil' } })).toBe(false);
    }
  });

  it('asks alsoAccept (the gateway: admin tokens) only for a bearer that is not the scrape token; a throw is no', async () => {
    const asked: string[] = [];
    const guard = makeGuard({
      token: TOKEN,
      trustLoopback: false,
      alsoAccept: (t) => {
        asked.push(t);
        if (t === 'boom') throw new Error('auth down');
        return t === 'admin-jwt';
      },
    });
    expect(await guard.check(bearer('admin-jwt'))).toBe(true);
    expect(await guard.check(bearer('user-jwt'))).toBe(false);
    expect(await guard.check(bearer('boom'))).toBe(false);
    expect(await guard.check(bearer(TOKEN))).toBe(true);
    expect(await guard.check({ headers: {}, socket: remote })).toBe(false);
    expect(asked).toEqual(['admin-jwt', 'user-jwt', 'boom']);
  });

  it('takes its settings from the shared config schema: loopback untrusted and no token by default', () => {
    const base = { DATABASE_URL: 'postgres://x@127.0.0.1/x' };
    expect(metricsAccessOf(BaseConfigSchema.parse(base))).toEqual({ token: undefined, trustLoopback: false });
    expect(
      metricsAccessOf(
        BaseConfigSchema.parse({ ...base, SKALD_METRICS_TOKEN: TOKEN, SKALD_METRICS_TRUST_LOOPBACK: 'on' }),
      ),
    ).toEqual({ token: TOKEN, trustLoopback: true });
    expect(BaseConfigSchema.safeParse({ ...base, SKALD_METRICS_TRUST_LOOPBACK: 'yes' }).success).toBe(false);
    expect(BaseConfigSchema.safeParse({ ...base, SKALD_METRICS_TOKEN: 'short' }).success).toBe(false);
  });

  it('lets the scrape token in from anywhere, and nothing else', async () => {
    const guard = makeGuard({ token: TOKEN, trustLoopback: false });
    expect(await guard.check(bearer(TOKEN))).toBe(true);
    expect(await guard.check({ headers: {}, socket: remote })).toBe(false);
    expect(await guard.check({ headers: { authorization: TOKEN }, socket: remote })).toBe(false);
  });

  it(`refuses every other bearer, near misses included (seed ${SEED})`, async () => {
    const guard = makeGuard({ token: TOKEN, trustLoopback: false });
    const nearMiss = fc
      .tuple(fc.nat({ max: TOKEN.length - 1 }), fc.string({ minLength: 1, maxLength: 1 }))
      .map(([i, c]) => TOKEN.slice(0, i) + c + TOKEN.slice(i + 1))
      .filter((t) => t !== TOKEN);
    const prefixes = fc.nat({ max: TOKEN.length - 1 }).map((n) => TOKEN.slice(0, n) || 'x');
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 80 }).filter((t) => t !== TOKEN),
          nearMiss,
          prefixes,
          fc.constant(`${TOKEN}x`),
        ),
        async (t) => {
          expect(await guard.check(bearer(t))).toBe(false);
        },
      ),
      { seed: SEED, numRuns: 3000 },
    );
  });

  it('has no scrape token unless one is configured', async () => {
    const guard = makeGuard({ trustLoopback: false });
    expect(await guard.check(bearer(TOKEN))).toBe(false);
    expect(await guard.check(bearer(''))).toBe(false);
  });
});
