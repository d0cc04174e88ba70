import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { jwtVerify, SignJWT } from 'jose';
import { Actor, Id, LoginResponse, UserDto } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import type { User } from './users.repository';
import { ApiError } from '../http/api-error';
import { GATEWAY_CONFIG, GatewayConfig } from '../config';
import { LoginSessionsRepository } from './login-sessions.repository';
import { CountedAttempt, LoginThrottle } from './login-throttle';
import { Hashing, PasswordHasher } from './password-hasher';
import { newSecret, sha256 } from './passwords';
import { UsersRepository } from './users.repository';

/** A verified credential: who, until when, and what it was issued under. */
export interface Principal {
  actor: Actor;
  /** When the credential stops being valid (JWT expiry, or that of the JWT a ticket was issued with); null for API tokens. */
  expiresAt: Date | null;
  /** The user's token version the credential was issued under; any role, password or disable change moves it on. */
  tokenVersion: number;
  /** The API token behind the credential (itself, or the one a ticket was issued with). */
  apiTokenId: string | null;
  /** The sign-in session behind the credential (a session JWT's `sid`, or that of the JWT a ticket was issued with). */
  loginSessionId: string | null;
}

/** What every refused bearer credential is told (no hint which check failed). */
const INVALID_TOKEN = 'invalid or expired token';

const TICKET_TTL_SECS = 30;

export function toUserDto(u: User): UserDto {
  return { id: u.id, email: u.email, role: u.role };
}

@Injectable()
export class AuthService {
  private readonly key: Uint8Array;
  /** A hash of a random password, checked when the email is unknown, so both paths cost the same. */
  private dummyHash: Promise<string> | null = null;

  constructor(
    private readonly users: UsersRepository,
    private readonly loginSessions: LoginSessionsRepository,
    private readonly throttle: LoginThrottle,
    private readonly hasher: PasswordHasher,
    private readonly bus: Bus,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {
    this.key = new TextEncoder().encode(config.SKALD_JWT_SECRET);
  }

  /** Creates the first admin from SKALD_ADMIN_EMAIL / SKALD_ADMIN_PASSWORD when it does not exist. */
  async bootstrapAdmin(): Promise<'created' | 'exists' | 'not_configured'> {
    const { SKALD_ADMIN_EMAIL: email, SKALD_ADMIN_PASSWORD: password } = this.config;
    if (!email || !password) return 'not_configured';
    if (await this.users.findByEmail(email)) return 'exists';
    const passwordHash = await this.hasher.withSlot((h) => h.hash(password));
    const created = await this.users.create({ email, passwordHash, role: 'admin' });
    return created ? 'created' : 'exists';
  }

  /**
   * Counted against the throttle before the password is checked (429 when a limit is used up),
   * checked in one of the gateway's bounded hashing slots (503 when they are all taken, the
   * attempt refunded); a weak stored hash is upgraded.
   */
  async login(email: string, password: string, address: string): Promise<LoginResponse> {
    if (this.config.SKALD_PASSWORD_LOGIN === 'off') throw new ApiError('forbidden', 'password login is turned off');
    const user = await this.verified(
      { email, address },
      () => this.users.findByEmail(email),
      async (h, found) => {
        if (!found) {
          await h.verify(password, await this.dummy(h));
          return null;
        }
        return (await this.checkPassword(h, found, password)) && !found.disabled ? found : null;
      },
    );
    if (!user) throw new ApiError('unauthorized', 'wrong email or password');
    return this.issueSession(user);
  }

  /**
   * A session JWT for this account (a password login; a finished single sign-on names its provider): its `sid` is a
   * row of `login_sessions` recorded first, which sign-out deletes.
   */
  async issueSession(user: User, providerId: string | null = null): Promise<LoginResponse> {
    const expiresAt = new Date(Date.now() + this.config.SKALD_TOKEN_TTL_SECS * 1000);
    const sid = randomUUID();
    await this.loginSessions.start({ id: sid, userId: user.id, providerId, expiresAt });
    const token = await new SignJWT({ role: user.role, tv: user.tokenVersion, sid })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(user.id)
      .setIssuedAt()
      .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
      .setIssuer('skald')
      .sign(this.key);
    return { token, expires_at: expiresAt.toISOString(), user: toUserDto(user) };
  }

  /**
   * The caller changes their own password, proving the current one (counted on the same limits as
   * a login from that address). Every credential of theirs ends, on every replica: log in again.
   */
  async changePassword(
    principal: Principal,
    change: { current: string; next: string },
    address: string,
  ): Promise<void> {
    if (this.config.SKALD_PASSWORD_LOGIN === 'off') throw new ApiError('forbidden', 'password login is turned off');
    const user = await this.users.findById(principal.actor.userId);
    if (!user || user.disabled) throw new ApiError('unauthorized', 'invalid or expired token');
    const next = await this.verified(
      { email: user.email, address },
      () => Promise.resolve(user),
      async (h) => ((await this.checkPassword(h, user, change.current)) ? h.hash(change.next) : null),
    );
    if (next === null) throw new ApiError('forbidden', 'the current password is wrong', 'current_password');
    await this.users.update(user.id, { passwordHash: next });
    this.announceRevoked(user.id);
  }

  /**
   * The attempt is counted first (throws 429 if a limit is used up), then what it names is looked
   * up, then `check` runs in a hashing slot (throws 503 if none is free, the attempt refunded).
   * A non-null result is a success.
   */
  private async verified<L, T>(
    attempt: { email: string; address: string },
    lookup: () => Promise<L>,
    check: (h: Hashing, found: L) => Promise<T | null>,
  ): Promise<T | null> {
    const counted: CountedAttempt = await this.throttle.begin(attempt);
    let result: T | null;
    try {
      const found = await lookup();
      result = await this.hasher.withSlot((h) => check(h, found));
    } catch (e) {
      if (e instanceof ApiError && e.code === 'unavailable') await this.throttle.notChecked(counted);
      throw e;
    }
    if (result !== null) await this.throttle.succeeded(counted);
    return result;
  }

  /**
   * Signs out the credential that made the request: a session JWT's session ends (the JWT, the tickets issued with
   * it and the sockets opened with them stop working on every replica), an API token is revoked.
   */
  async logout(principal: Principal): Promise<void> {
    const { userId } = principal.actor;
    if (principal.loginSessionId) await this.loginSessions.end({ userId, sessionId: principal.loginSessionId });
    else if (principal.apiTokenId) await this.users.revokeToken({ userId, tokenId: principal.apiTokenId });
    this.announceRevoked(userId);
  }

  /** Tells every gateway replica to re-check this user's sockets now (the periodic check catches a lost one). */
  announceRevoked(userId: string): void {
    this.bus.publish('userRevoked', { user_id: userId });
  }

  private async checkPassword(h: Hashing, user: User, password: string): Promise<boolean> {
    const check = await h.verify(password, user.passwordHash);
    if (check.ok && check.needsRehash) {
      await this.users.upgradePasswordHash({
        userId: user.id,
        from: user.passwordHash,
        to: await h.hash(password),
      });
    }
    return check.ok;
  }

  private dummy(h: Hashing): Promise<string> {
    this.dummyHash ??= h.hash(newSecret('dummy'));
    return this.dummyHash;
  }

  /** A bearer credential: a session JWT or an API token (`skt_…`). The user is re-read each time. */
  async authenticate(bearer: string): Promise<Principal> {
    if (bearer.startsWith('skt_')) {
      const found = await this.users.userByTokenHash(sha256(bearer));
      if (!found || found.user.disabled) throw new ApiError('unauthorized', 'invalid or revoked API token');
      const { user, tokenId } = found;
      return {
        actor: { userId: user.id, role: user.role },
        expiresAt: null,
        tokenVersion: user.tokenVersion,
        apiTokenId: tokenId,
        loginSessionId: null,
      };
    }
    let sub: unknown;
    let tv: unknown;
    let sid: unknown;
    let exp: number | undefined;
    try {
      const { payload } = await jwtVerify(bearer, this.key, { issuer: 'skald', algorithms: ['HS256'] });
      ({ sub, tv, sid, exp } = payload);
    } catch {
      throw new ApiError('unauthorized', INVALID_TOKEN);
    }
    // a JWT without a session of this user (none, malformed, ended, another user's) is refused like a bad signature
    if (!Id.safeParse(sub).success || !Id.safeParse(sid).success) throw new ApiError('unauthorized', INVALID_TOKEN);
    const found = await this.loginSessions.userWithSession(sub as string, sid as string);
    const user = found?.sessionLive ? found.user : null;
    if (!user || user.disabled || user.tokenVersion !== tv) throw new ApiError('unauthorized', INVALID_TOKEN);
    return {
      actor: { userId: user.id, role: user.role },
      expiresAt: exp ? new Date(exp * 1000) : null,
      tokenVersion: user.tokenVersion,
      apiTokenId: null,
      loginSessionId: sid as string,
    };
  }

  /** Which of these principals are still valid (not expired or disabled, role/password unchanged, API token or session live)? */
  async stillValid(principals: readonly Principal[]): Promise<boolean[]> {
    const users = new Map(
      (await this.users.findByIds([...new Set(principals.map((p) => p.actor.userId))])).map((u) => [u.id, u]),
    );
    const tokenIds = principals.map((p) => p.apiTokenId).filter((t): t is string => t !== null);
    const liveTokens = await this.users.liveTokenIds([...new Set(tokenIds)]);
    const sessionIds = principals.map((p) => p.loginSessionId).filter((s): s is string => s !== null);
    const liveSessions = await this.loginSessions.liveIds([...new Set(sessionIds)]);
    const now = Date.now();
    return principals.map((p) => {
      const user = users.get(p.actor.userId);
      return (
        (!p.expiresAt || p.expiresAt.getTime() > now) &&
        !!user &&
        !user.disabled &&
        user.tokenVersion === p.tokenVersion &&
        user.role === p.actor.role &&
        (p.apiTokenId === null || liveTokens.has(p.apiTokenId)) &&
        (p.loginSessionId === null || liveSessions.has(p.loginSessionId))
      );
    });
  }

  /** A single-use ticket standing for the credential that asked for it (same expiry, version, API token). */
  async issueWsTicket(principal: Principal): Promise<string> {
    const ticket = newSecret('wst');
    await this.users.createTicket({
      userId: principal.actor.userId,
      ticketHash: sha256(ticket),
      ttlSecs: TICKET_TTL_SECS,
      tokenVersion: principal.tokenVersion,
      credentialExpiresAt: principal.expiresAt,
      apiTokenId: principal.apiTokenId,
      loginSessionId: principal.loginSessionId,
    });
    return ticket;
  }

  async redeemWsTicket(ticket: string): Promise<Principal> {
    const row = await this.users.consumeTicket(sha256(ticket));
    const user = row ? await this.users.findById(row.userId) : null;
    if (!row || !user || row.tokenVersion === null)
      throw new ApiError('unauthorized', 'invalid, used or expired ticket');
    const principal: Principal = {
      actor: { userId: user.id, role: user.role },
      expiresAt: row.credentialExpiresAt,
      tokenVersion: row.tokenVersion,
      apiTokenId: row.apiTokenId,
      loginSessionId: row.loginSessionId,
    };
    const [valid] = await this.stillValid([principal]);
    if (!valid) throw new ApiError('unauthorized', 'invalid, used or expired ticket');
    return principal;
  }

  async createApiToken(actor: Actor, name: string): Promise<{ id: string; name: string; token: string }> {
    const token = newSecret('skt');
    const row = await this.users.createToken(actor.userId, name, sha256(token));
    return { id: row.id, name: row.name, token };
  }
}
