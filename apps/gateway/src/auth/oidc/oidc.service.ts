import { Inject, Injectable, Optional } from '@nestjs/common';
import type { LoginResponse } from '@skald/contracts';
import { ApiError } from '../../http/api-error';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config';
import { GATEWAY_LOGGER } from '../../tokens';
import type { Logger } from '@skald/service-kit';
import { AuthService } from '../auth.service';
import { newSecret, sha256 } from '../passwords';
import { GroupsService } from '../../groups/groups.service';
import type { User } from '../users.repository';
import { UsersRepository } from '../users.repository';
import { addressKey } from '../login-address';
import { LoginThrottle } from '../login-throttle';
import { OidcClient } from './oidc-client';
import { OidcRepository } from './oidc.repository';
import {
  accountDecision,
  allowListRefusal,
  claimedGroups,
  IdClaims,
  OidcProviderConfig,
  OidcRefusal,
  safeReturnTo,
  verifiedEmail,
} from './oidc-rules';

/**
 * The cookies binding a sign-in to the browser that started it (login CSRF: a callback from another browser fails),
 * one per attempt: its name ends in the first 16 hex digits of the SHA-256 of the attempt's `state`, so a second
 * sign-in started in another tab sets a cookie of its own and both callbacks find theirs.
 */
export const BINDING_COOKIE_PREFIX = 'skald_oidc_';

/** The binding cookie's name for the attempt of this `state`. */
export function bindingCookieName(state: string): string {
  return `${BINDING_COOKIE_PREFIX}${sha256(state).slice(0, 16)}`;
}
const HANDOFF_TTL_SECS = 60;
/** JIT accounts have no password: this stored "hash" never matches one. */
const NO_PASSWORD = '!sso';

/** A redirect the browser follows, and the binding cookie to set (start) or clear (callback: value '', max age 0). */
export interface Redirect {
  location: string;
  binding?: { name: string; value: string; maxAgeMs: number };
}

/**
 * Single sign-on with the OpenID Providers of `SKALD_OIDC_PROVIDERS`: the redirect to a provider, its callback
 * (state, binding, nonce, PKCE, ID token signature, issuer, allow-lists, which account), the handoff of the session
 * to the web client, and the provider's logout page.
 */
@Injectable()
export class OidcService {
  private readonly clients = new Map<string, OidcClient>();
  private readonly base: string;

  constructor(
    private readonly repo: OidcRepository,
    private readonly users: UsersRepository,
    private readonly auth: AuthService,
    private readonly groups: GroupsService,
    private readonly throttle: LoginThrottle,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Optional() @Inject(GATEWAY_LOGGER) private readonly log?: Logger,
  ) {
    if (config.SKALD_PASSWORD_LOGIN === 'off' && config.SKALD_OIDC_PROVIDERS.length === 0) {
      throw new Error('SKALD_PASSWORD_LOGIN=off needs at least one provider in SKALD_OIDC_PROVIDERS');
    }
    for (const p of config.SKALD_OIDC_PROVIDERS) this.clients.set(p.id, new OidcClient(p));
    this.base = (config.SKALD_PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`).replace(/\/$/, '');
  }

  /** What the login page offers. */
  loginOptions(): { password_login: boolean; providers: Array<{ id: string; label: string }> } {
    return {
      password_login: this.config.SKALD_PASSWORD_LOGIN === 'on',
      providers: this.config.SKALD_OIDC_PROVIDERS.map((p) => ({ id: p.id, label: p.label })),
    };
  }

  private client(providerId: string): OidcClient {
    const c = this.clients.get(providerId);
    if (!c) throw new ApiError('not_found', 'no such sign-in provider');
    return c;
  }

  redirectUri(providerId: string): string {
    return `${this.base}/api/auth/oidc/${providerId}/callback`;
  }

  /**
   * Records a flow and sends the browser to the provider (binding cookie set). Throttled per client `address`: at
   * most `SKALD_OIDC_MAX_FLOWS_PER_ADDRESS` started a minute and under way at once (429 with Retry-After).
   */
  async start(providerId: string, returnTo: unknown, address: string): Promise<Redirect> {
    const client = this.client(providerId);
    await this.throttle.countSignInStart(address);
    const checks = OidcClient.newChecks();
    const binding = newSecret('sso');
    let location: string;
    try {
      location = await client.authorizationUrl(this.redirectUri(providerId), checks);
    } catch (e) {
      this.log?.warn({ err: e, provider: providerId }, 'oidc: the provider cannot be reached');
      throw new ApiError('unavailable', 'the sign-in provider cannot be reached');
    }
    const ttlMs = this.config.SKALD_OIDC_FLOW_TTL_SECS * 1000;
    const started = await this.repo.startFlow(
      sha256(checks.state),
      {
        providerId,
        nonce: checks.nonce,
        codeVerifier: checks.codeVerifier,
        bindingHash: sha256(binding),
        returnTo: safeReturnTo(returnTo),
        expiresAt: new Date(Date.now() + ttlMs),
        addressHash: sha256(addressKey(address)),
      },
      this.config.SKALD_OIDC_MAX_FLOWS_PER_ADDRESS,
    );
    if (!started.started) {
      const secs = started.retryAfterSecs;
      throw new ApiError(
        'rate_limited',
        `too many sign-ins under way from this address; try again in ${secs} s`,
        undefined,
        secs,
      );
    }
    return { location, binding: { name: bindingCookieName(checks.state), value: binding, maxAgeMs: ttlMs } };
  }

  /**
   * The provider's callback (`query`: its parameters as received). Never throws for a refused sign-in: the browser
   * goes to the login page with `#oidc-error={why}`; a sign-in that passes goes there with `#oidc={handoff}`.
   * `cookie(name)`: the value of the request's cookie of that name; the attempt's binding cookie is cleared.
   */
  async callback(
    providerId: string,
    query: URLSearchParams,
    cookie: (name: string) => string | undefined,
  ): Promise<Redirect> {
    const state = query.get('state');
    const cleared = state ? { name: bindingCookieName(state), value: '', maxAgeMs: 0 } : undefined;
    const refuse = (why: OidcRefusal, detail?: string | null): Redirect => {
      if (detail !== undefined) this.log?.info({ provider: providerId, why, detail }, 'oidc: refused');
      return { location: `/#oidc-error=${why}`, binding: cleared };
    };
    const client = this.clients.get(providerId);
    if (!client || !state) return refuse('failed', 'unknown provider or no state');
    const binding = cookie(bindingCookieName(state));
    const flow = await this.repo.takeFlow(sha256(state));
    if (!flow) return refuse('expired', 'unknown or used state');
    if (flow.expiresAt.getTime() <= Date.now()) return refuse('expired', 'expired state');
    // the flow's provider must be the one whose redirect URI was called (mix-up between providers)
    if (flow.providerId !== providerId) return refuse('failed', 'flow of another provider');
    if (!binding || sha256(binding) !== flow.bindingHash) return refuse('failed', 'not the browser that started it');
    if (query.has('error')) return refuse('denied', query.get('error'));
    const p = client.provider;
    let claims: IdClaims;
    try {
      const current = new URL(this.redirectUri(providerId));
      current.search = query.toString();
      claims = await client.claims(current, { state, nonce: flow.nonce, codeVerifier: flow.codeVerifier });
    } catch (e) {
      return refuse('failed', e instanceof Error ? `${e.name}: ${e.message}` : 'not an Error');
    }
    const user = await this.account(p, claims);
    if ('why' in user) return refuse(user.why, user.why);
    // Fail closed: the memberships must be the claim's before the session exists, or a group the provider took away
    // would go on granting (and one it added withheld) until the next sign-in. The sync sets the whole list, so the
    // user's retry repeats it safely; the identity row recorded above keeps the claim either way.
    try {
      await this.groups.syncIdpGroups({ userId: user.id, role: user.role }, claimedGroups(claims, p.groups_claim));
    } catch (e) {
      this.log?.warn({ err: e, provider: providerId, userId: user.id }, 'oidc: the groups could not be synced');
      return refuse('unavailable');
    }
    const handoff = newSecret('sso');
    await this.repo.createHandoff({
      handoffHash: sha256(handoff),
      userId: user.id,
      providerId,
      returnTo: flow.returnTo,
      ttlSecs: HANDOFF_TTL_SECS,
    });
    return { location: `/#oidc=${handoff}`, binding: cleared };
  }

  /** The account these verified claims sign in to (created or linked as the rules say), or why not. */
  private async account(p: OidcProviderConfig, claims: IdClaims): Promise<User | { why: OidcRefusal }> {
    const refused = allowListRefusal(p, claims);
    if (refused) return { why: refused };
    const linked = await this.repo.identityUser(p.id, claims.sub);
    const email = typeof claims.email === 'string' ? claims.email : null;
    const byEmail = !linked && email ? await this.users.findByEmail(email) : null;
    const decision = accountDecision(p, claims, linked, byEmail);
    let userId: string;
    if (decision.kind === 'refuse') return { why: decision.why };
    if (decision.kind === 'create') {
      const created = await this.users.create({ email: decision.email, passwordHash: NO_PASSWORD, role: 'user' });
      if (!created) return { why: 'email_taken' };
      userId = created.id;
    } else userId = decision.userId;
    const user = await this.users.findById(userId);
    if (!user || user.disabled) return { why: 'disabled' };
    const recorded = await this.repo.recordIdentity({
      providerId: p.id,
      subject: claims.sub,
      userId,
      email: verifiedEmail(claims) ?? email,
      groups: claimedGroups(claims, p.groups_claim),
    });
    return recorded ? user : { why: 'failed' };
  }

  /** The web client takes the session of a finished sign-in (once, within a minute). */
  async redeem(handoff: string): Promise<LoginResponse & { return_to: string; provider: string }> {
    const taken = await this.repo.takeHandoff(sha256(handoff));
    const user = taken ? await this.users.findById(taken.userId) : null;
    if (!taken || !user || user.disabled) throw new ApiError('unauthorized', 'invalid, used or expired sign-in');
    return {
      ...(await this.auth.issueSession(user, taken.providerId)),
      return_to: taken.returnTo,
      provider: taken.providerId,
    };
  }

  /** The provider's logout page, back to the login page afterwards; `/` when the provider has none. */
  async logout(providerId: string): Promise<Redirect> {
    const client = this.client(providerId);
    try {
      return { location: (await client.endSessionUrl(`${this.base}/`)) ?? '/' };
    } catch (e) {
      this.log?.warn({ err: e, provider: providerId }, 'oidc: the provider cannot be reached');
      return { location: '/' };
    }
  }
}
