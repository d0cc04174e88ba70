import { Inject, Injectable } from '@nestjs/common';
import { jwtVerify, SignJWT } from 'jose';
import { Actor, LoginResponse, UserDto } from '@skald/contracts';
import { UserEntity } from '@skald/persistence';
import { ApiError } from '../http/api-error';
import { GATEWAY_CONFIG, GatewayConfig } from '../config';
import { hashPassword, newSecret, sha256, verifyPassword } from './passwords';
import { UsersRepository } from './users.repository';

export interface Principal {
  actor: Actor;
  /** When the credential stops being valid (JWT expiry); null for API tokens. */
  expiresAt: Date | null;
  tokenVersion: number;
}

const TICKET_TTL_SECS = 30;
// A fixed hash to compare against when the email is unknown, so both paths take the same time.
const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

export function toUserDto(u: UserEntity): UserDto {
  return { id: u.id, email: u.email, role: u.role };
}

@Injectable()
export class AuthService {
  private readonly key: Uint8Array;

  constructor(
    private readonly users: UsersRepository,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {
    this.key = new TextEncoder().encode(config.SKALD_JWT_SECRET);
  }

  /** Creates the first admin from SKALD_ADMIN_EMAIL / SKALD_ADMIN_PASSWORD when it does not exist. */
  async bootstrapAdmin(): Promise<'created' | 'exists' | 'not_configured'> {
    const { SKALD_ADMIN_EMAIL: email, SKALD_ADMIN_PASSWORD: password } = this.config;
    if (!email || !password) return 'not_configured';
    if (await this.users.findByEmail(email)) return 'exists';
    const created = await this.users.create({ email, passwordHash: await hashPassword(password), role: 'admin' });
    return created ? 'created' : 'exists';
  }

  async login(email: string, password: string): Promise<LoginResponse> {
    const user = await this.users.findByEmail(email);
    const ok = await verifyPassword(password, user?.passwordHash ?? DUMMY_HASH);
    if (!user || !ok || user.disabled) throw new ApiError('unauthorized', 'wrong email or password');
    const expiresAt = new Date(Date.now() + this.config.SKALD_TOKEN_TTL_SECS * 1000);
    const token = await new SignJWT({ role: user.role, tv: user.tokenVersion })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(user.id)
      .setIssuedAt()
      .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
      .setIssuer('skald')
      .sign(this.key);
    return { token, expires_at: expiresAt.toISOString(), user: toUserDto(user) };
  }

  /** A bearer credential: a session JWT or an API token (`skt_…`). The user is re-read each time. */
  async authenticate(bearer: string): Promise<Principal> {
    if (bearer.startsWith('skt_')) {
      const user = await this.users.userByTokenHash(sha256(bearer));
      if (!user || user.disabled) throw new ApiError('unauthorized', 'invalid or revoked API token');
      return { actor: { userId: user.id, role: user.role }, expiresAt: null, tokenVersion: user.tokenVersion };
    }
    let sub: string | undefined;
    let tv: unknown;
    let exp: number | undefined;
    try {
      const { payload } = await jwtVerify(bearer, this.key, { issuer: 'skald', algorithms: ['HS256'] });
      sub = payload.sub;
      tv = payload.tv;
      exp = payload.exp;
    } catch {
      throw new ApiError('unauthorized', 'invalid or expired token');
    }
    const user = sub ? await this.users.findById(sub) : null;
    if (!user || user.disabled || user.tokenVersion !== tv)
      throw new ApiError('unauthorized', 'invalid or expired token');
    return {
      actor: { userId: user.id, role: user.role },
      expiresAt: exp ? new Date(exp * 1000) : null,
      tokenVersion: user.tokenVersion,
    };
  }

  /** Is this principal still valid (not disabled, role/password unchanged)? Sockets re-check it. */
  async stillValid(p: Principal): Promise<boolean> {
    if (p.expiresAt && p.expiresAt.getTime() <= Date.now()) return false;
    const user = await this.users.findById(p.actor.userId);
    return !!user && !user.disabled && user.tokenVersion === p.tokenVersion && user.role === p.actor.role;
  }

  async issueWsTicket(actor: Actor): Promise<string> {
    const ticket = newSecret('wst');
    await this.users.createTicket(actor.userId, sha256(ticket), TICKET_TTL_SECS);
    return ticket;
  }

  async redeemWsTicket(ticket: string): Promise<Principal> {
    const userId = await this.users.consumeTicket(sha256(ticket));
    const user = userId ? await this.users.findById(userId) : null;
    if (!user || user.disabled) throw new ApiError('unauthorized', 'invalid, used or expired ticket');
    return { actor: { userId: user.id, role: user.role }, expiresAt: null, tokenVersion: user.tokenVersion };
  }

  async createApiToken(actor: Actor, name: string): Promise<{ id: string; name: string; token: string }> {
    const token = newSecret('skt');
    const row = await this.users.createToken(actor.userId, name, sha256(token));
    return { id: row.id, name: row.name, token };
  }
}
