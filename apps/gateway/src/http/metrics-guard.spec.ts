import fc from 'fast-check';
import type { AuthService } from '../auth/auth.service';
import { metricsGuard } from './metrics-guard';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const TOKEN = 'scrape-token-0123456789abcdefghijklmnopqrstuv';
const remote = { remoteAddress: '10.1.2.3' };
const bearer = (t: string) => ({ headers: { authorization: `Bearer ${t}` }, socket: remote });

/** An AuthService that knows no token (every authenticate fails, as for a stranger's bearer). */
const noTokens = { authenticate: () => Promise.reject(new Error('unknown token')) } as unknown as AuthService;

const LOOPBACKS = ['127.0.0.1', '::1', '::ffff:127.0.0.1'];

describe('the gateway /metrics guard', () => {
  it('a loopback peer without a token is refused unless SKALD_METRICS_TRUST_LOOPBACK is on; with the token it is let in', async () => {
    for (const trustLoopback of [false, true]) {
      const guard = metricsGuard({ token: TOKEN, trustLoopback });
      guard.bind(noTokens);
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

  it("an admin's token opens it, a user's does not", async () => {
    const guard = metricsGuard({ trustLoopback: false });
    guard.bind({
      authenticate: (t: string) =>
        Promise.resolve({ actor: { userId: 'u', role: t === 'admin-jwt' ? 'admin' : 'user' } }),
    } as unknown as AuthService);
    expect(await guard.check(bearer('admin-jwt'))).toBe(true);
    expect(await guard.check(bearer('user-jwt'))).toBe(false);
  });

  it('lets the scrape token in from anywhere, and nothing else without an admin token', async () => {
    const guard = metricsGuard({ token: TOKEN, trustLoopback: false });
    guard.bind(noTokens);
    expect(await guard.check(bearer(TOKEN))).toBe(true);
    expect(await guard.check({ headers: {}, socket: remote })).toBe(false);
    expect(await guard.check({ headers: { authorization: TOKEN }, socket: remote })).toBe(false);
  });

  it(`refuses every other bearer, near misses included (seed ${SEED})`, async () => {
    const guard = metricsGuard({ token: TOKEN, trustLoopback: false });
    guard.bind(noTokens);
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
    const guard = metricsGuard({ trustLoopback: false });
    guard.bind(noTokens);
    expect(await guard.check(bearer(TOKEN))).toBe(false);
    expect(await guard.check(bearer(''))).toBe(false);
  });
});
