import * as client from 'openid-client';
import type { OidcProviderConfig } from './oidc-rules';

/** Plain http is allowed for an issuer on a loopback address only (a provider on the developer's machine, tests). */
export function isLoopbackHttp(issuer: string): boolean {
  const u = new URL(issuer);
  return u.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname);
}

/** The checks a callback must pass, kept from the redirect. */
export interface CallbackChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/**
 * One provider through `openid-client` (certified Relying Party): discovery once (retried after a failure),
 * authorization code flow with PKCE (S256), `state` and `nonce`, the ID token's signature checked against the
 * provider's JWKS (refetched when it names a key not seen yet), `iss` of the authorization response checked when the
 * provider announces it.
 */
export class OidcClient {
  private config: Promise<client.Configuration> | null = null;

  constructor(readonly provider: OidcProviderConfig) {}

  private configuration(): Promise<client.Configuration> {
    this.config ??= client
      .discovery(
        new URL(this.provider.issuer),
        this.provider.client_id,
        this.provider.client_secret,
        client.ClientSecretPost(this.provider.client_secret),
        isLoopbackHttp(this.provider.issuer)
          ? { execute: [client.allowInsecureRequests], timeout: 10 }
          : { timeout: 10 },
      )
      .then((c) => {
        client.enableNonRepudiationChecks(c);
        return c;
      });
    this.config.catch(() => (this.config = null));
    return this.config;
  }

  static newChecks(): CallbackChecks {
    return { state: client.randomState(), nonce: client.randomNonce(), codeVerifier: client.randomPKCECodeVerifier() };
  }

  async authorizationUrl(redirectUri: string, checks: CallbackChecks): Promise<string> {
    const config = await this.configuration();
    return client
      .buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: this.provider.scopes.join(' '),
        state: checks.state,
        nonce: checks.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(checks.codeVerifier),
        code_challenge_method: 'S256',
      })
      .toString();
  }

  /** Redeems the code of the callback `currentUrl` (its path is the redirect URI); the verified ID token's claims. */
  async claims(currentUrl: URL, checks: CallbackChecks): Promise<Record<string, unknown> & { sub: string }> {
    const config = await this.configuration();
    const tokens = await client.authorizationCodeGrant(config, currentUrl, {
      pkceCodeVerifier: checks.codeVerifier,
      expectedState: checks.state,
      expectedNonce: checks.nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    if (!claims) throw new Error('no ID token');
    return claims;
  }

  /** The provider's logout page (RP-initiated logout), or null when it has none. */
  async endSessionUrl(postLogoutRedirectUri: string): Promise<string | null> {
    const config = await this.configuration();
    if (!config.serverMetadata().end_session_endpoint) return null;
    return client
      .buildEndSessionUrl(config, {
        client_id: this.provider.client_id,
        post_logout_redirect_uri: postLogoutRedirectUri,
      })
      .toString();
  }
}
