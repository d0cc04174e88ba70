/**
 * OidcService with fakes, for the checks a callback makes before the provider is asked: a flow is
 * taken once by its state, and refused when unknown, expired, started for another provider (mix-up)
 * or by another browser (login CSRF); a handoff gives a session once, never to a disabled account.
 * The checks that need a real provider (signature, nonce, code) are in test/integration/oidc.spec.ts.
 */
import fc from 'fast-check';
import { fake, newTestService } from '@skald/testing/unit';
import { GATEWAY_CONFIG, type GatewayConfig } from '../../config';
import { AuthService } from '../auth.service';
import { sha256 } from '../passwords';
import { UsersRepository } from '../users.repository';
import { OidcRepository, type OidcFlow } from './oidc.repository';
import { OidcProviderConfig } from './oidc-rules';
import { bindingCookieName, OidcService } from './oidc.service';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const provider = (id: string) =>
  OidcProviderConfig.parse({ id, label: id, issuer: `https://${id}.idp.test`, client_id: 'c', client_secret: 's' });
const PROVIDERS = [provider('acme'), provider('other')];
const BINDING = 'sso_binding';

function setUp(flow: OidcFlow | null, password: 'on' | 'off' = 'on') {
  const config = {
    SKALD_OIDC_PROVIDERS: PROVIDERS,
    SKALD_PASSWORD_LOGIN: password,
    SKALD_OIDC_FLOW_TTL_SECS: 600,
    HOST: '127.0.0.1',
    PORT: 8080,
  } as unknown as GatewayConfig;
  const t = newTestService(OidcService, [fake(GATEWAY_CONFIG, config)]);
  const repo = t.mock(OidcRepository);
  const taken: string[] = [];
  repo.takeFlow.mockImplementation(async (hash: string) => {
    taken.push(hash);
    return flow;
  });
  return { sut: t.sut, repo, users: t.mock(UsersRepository), auth: t.mock(AuthService), taken };
}

const flowOf = (over: Partial<OidcFlow> = {}): OidcFlow => ({
  providerId: 'acme',
  nonce: 'n',
  codeVerifier: 'v',
  bindingHash: sha256(BINDING),
  returnTo: '/',
  expiresAt: new Date(Date.now() + 60_000),
  ...over,
});
const cleared = (state: string) => ({ name: bindingCookieName(state), value: '', maxAgeMs: 0 });
const query = (state: string, extra: Record<string, string> = {}) =>
  new URLSearchParams({ state, code: 'code', ...extra });

describe('OidcService', () => {
  it('will not start with password login off and no provider to sign in with', () => {
    const config = { SKALD_OIDC_PROVIDERS: [], SKALD_PASSWORD_LOGIN: 'off' } as unknown as GatewayConfig;
    expect(() => newTestService(OidcService, [fake(GATEWAY_CONFIG, config)])).toThrow(/SKALD_PASSWORD_LOGIN=off/);
  });

  it('offers each provider by id and label, never its secret', () => {
    const options = setUp(null).sut.loginOptions();
    expect(options).toEqual({
      password_login: true,
      providers: [
        { id: 'acme', label: 'acme' },
        { id: 'other', label: 'other' },
      ],
    });
    expect(JSON.stringify(options)).not.toContain('client_secret');
  });

  it(`refuses a callback before asking the provider: unknown, expired, mixed-up or another browser's (seed ${SEED})`, async () => {
    const cases: Array<[string, OidcFlow | null, string | undefined, Record<string, string>, string]> = [
      ['unknown state', null, BINDING, {}, 'expired'],
      ['expired', flowOf({ expiresAt: new Date(Date.now() - 1) }), BINDING, {}, 'expired'],
      ["another provider's flow", flowOf({ providerId: 'other' }), BINDING, {}, 'failed'],
      ['no binding cookie', flowOf(), undefined, {}, 'failed'],
      ['the provider said no', flowOf(), BINDING, { error: 'access_denied' }, 'denied'],
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...cases),
        fc.string({ minLength: 1 }),
        fc.string(),
        async (c, state, cookie) => {
          const [, flow, binding, extra, why] = c;
          const { sut, users, taken } = setUp(flow);
          const wrongCookie = binding !== undefined && cookie !== BINDING && why === 'failed' ? cookie : binding;
          // the cookie is looked up under the attempt's own name only
          const r = await sut.callback('acme', query(state, extra), (name) =>
            name === bindingCookieName(state) ? wrongCookie : BINDING,
          );
          expect(r).toEqual({ location: `/#oidc-error=${why}`, binding: cleared(state) });
          expect(taken).toEqual([sha256(state)]);
          expect(users.create).not.toHaveBeenCalled();
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('refuses a callback to a provider that is not configured without reading any flow', async () => {
    const { sut, taken } = setUp(flowOf());
    expect(await sut.callback('nope', query('s'), () => BINDING)).toEqual({
      location: '/#oidc-error=failed',
      binding: cleared('s'),
    });
    expect(taken).toEqual([]);
  });

  it('gives a session for a handoff once, never to a disabled account', async () => {
    const { sut, repo, users, auth } = setUp(null);
    repo.takeHandoff.mockResolvedValueOnce(null);
    await expect(sut.redeem('sso_x')).rejects.toMatchObject({ code: 'unauthorized' });
    repo.takeHandoff.mockResolvedValueOnce({ userId: 'u1', providerId: 'acme', returnTo: '/#inbox' });
    users.findById.mockResolvedValueOnce({ id: 'u1', disabled: true } as never);
    await expect(sut.redeem('sso_y')).rejects.toMatchObject({ code: 'unauthorized' });
    expect(auth.issueSession).not.toHaveBeenCalled();
  });
});
