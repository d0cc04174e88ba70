import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { Role } from '@skald/contracts';
import { queryRows } from '@skald/persistence/query-rows';
import type { ApiTokensRow, UsersRow, WsTicketsRow } from '@skald/persistence';

/** A user account as the gateway works with it. */
export interface User {
  id: string;
  email: string;
  passwordHash: string;
  role: Role;
  disabled: boolean;
  tokenVersion: number;
  createdAt: Date;
  updatedAt: Date;
}

/** An API token (its hash only: the token itself is shown once, when created). */
export interface ApiToken {
  id: string;
  userId: string;
  name: string;
  tokenHash: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export function toUser(r: UsersRow): User {
  return {
    id: r.id,
    email: r.email,
    passwordHash: r.password_hash,
    role: Role.parse(r.role),
    disabled: r.disabled,
    tokenVersion: r.token_version,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function toApiToken(r: ApiTokensRow): ApiToken {
  return {
    id: r.id,
    userId: r.user_id,
    name: r.name,
    tokenHash: r.token_hash,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
    revokedAt: r.revoked_at,
  };
}

/** Users, API tokens and WS tickets: the gateway's own tables. */
@Injectable()
export class UsersRepository {
  constructor(private readonly ds: Database) {}

  async findByEmail(email: string): Promise<User | null> {
    const rows = await queryRows<UsersRow>(this.ds, `SELECT * FROM users WHERE lower(email) = lower($1)`, [email]);
    return rows[0] ? toUser(rows[0]) : null;
  }

  async findById(id: string): Promise<User | null> {
    const rows = await queryRows<UsersRow>(this.ds, `SELECT * FROM users WHERE id = $1`, [id]);
    return rows[0] ? toUser(rows[0]) : null;
  }

  async list(): Promise<User[]> {
    return (await queryRows<UsersRow>(this.ds, `SELECT * FROM users ORDER BY created_at`)).map(toUser);
  }

  /** The users whose id sorts after `after` (from the first when null), in id order, at most `limit`. */
  async page(after: string | null, limit: number): Promise<{ id: string; role: Role }[]> {
    const rows = await queryRows<Pick<UsersRow, 'id' | 'role'>>(
      this.ds,
      `SELECT id, role FROM users WHERE $1::uuid IS NULL OR id > $1::uuid ORDER BY id LIMIT $2`,
      [after, limit],
    );
    return rows.map((r) => ({ id: r.id, role: Role.parse(r.role) }));
  }

  /** Inserts a user; null if the email is taken. */
  async create(user: { email: string; passwordHash: string; role: Role }): Promise<User | null> {
    const rows = await queryRows<UsersRow>(
      this.ds,
      `INSERT INTO users (id, email, password_hash, role) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING *`,
      [randomUUID(), user.email, user.passwordHash, user.role],
    );
    return rows[0] ? toUser(rows[0]) : null;
  }

  /**
   * Applies a role, password or disabled change and, in the same transaction, ends every
   * credential the user holds: the token version moves on (session JWTs and sockets opened with
   * them), every API token is revoked, every unredeemed WS ticket is deleted.
   */
  async update(id: string, patch: { role?: Role; disabled?: boolean; passwordHash?: string }): Promise<User | null> {
    const changed = await this.ds.transaction(async (tx) => {
      const rows = await queryRows<Pick<UsersRow, 'id'>>(
        tx,
        `UPDATE users SET role = COALESCE($2, role), disabled = COALESCE($3, disabled), password_hash = COALESCE($4, password_hash),
                token_version = token_version + 1, updated_at = now()
          WHERE id = $1 RETURNING id`,
        [id, patch.role ?? null, patch.disabled ?? null, patch.passwordHash ?? null],
      );
      if (rows.length === 0) return false;
      await tx.query(`UPDATE api_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`, [id]);
      await tx.query(`DELETE FROM ws_tickets WHERE user_id = $1 AND used_at IS NULL`, [id]);
      return true;
    });
    return changed ? this.findById(id) : null;
  }

  /**
   * Replaces a password hash by a stronger hash of the same password (no credential ends): only
   * if the row still holds the hash that was checked, so a concurrent password change wins.
   */
  async upgradePasswordHash(scope: { userId: string; from: string; to: string }): Promise<boolean> {
    const rows = await queryRows<Pick<UsersRow, 'id'>>(
      this.ds,
      `UPDATE users SET password_hash = $3 WHERE id = $1 AND password_hash = $2 RETURNING id`,
      [scope.userId, scope.from, scope.to],
    );
    return rows.length > 0;
  }

  async createToken(userId: string, name: string, tokenHash: string): Promise<ApiToken> {
    const rows = await queryRows<ApiTokensRow>(
      this.ds,
      `INSERT INTO api_tokens (id, user_id, name, token_hash) VALUES ($1, $2, $3, $4) RETURNING *`,
      [randomUUID(), userId, name, tokenHash],
    );
    return toApiToken(rows[0]);
  }

  /** The user's live (not revoked) tokens, oldest first. */
  async listTokens(userId: string): Promise<ApiToken[]> {
    const rows = await queryRows<ApiTokensRow>(
      this.ds,
      `SELECT * FROM api_tokens WHERE user_id = $1 AND revoked_at IS NULL ORDER BY created_at`,
      [userId],
    );
    return rows.map(toApiToken);
  }

  async revokeToken(scope: { userId: string; tokenId: string }): Promise<boolean> {
    const rows = await queryRows<Pick<ApiTokensRow, 'id'>>(
      this.ds,
      `UPDATE api_tokens SET revoked_at = now() WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL RETURNING id`,
      [scope.tokenId, scope.userId],
    );
    return rows.length > 0;
  }

  /** The live token's user and its id, touching `last_used_at` at most once a minute. */
  async userByTokenHash(tokenHash: string): Promise<{ user: User; tokenId: string } | null> {
    const rows = await queryRows<Pick<ApiTokensRow, 'id' | 'user_id'>>(
      this.ds,
      `UPDATE api_tokens SET last_used_at = CASE WHEN last_used_at IS NULL OR last_used_at < now() - interval '1 minute' THEN now() ELSE last_used_at END
        WHERE token_hash = $1 AND revoked_at IS NULL RETURNING id, user_id`,
      [tokenHash],
    );
    const user = rows[0] ? await this.findById(rows[0].user_id) : null;
    return user && rows[0] ? { user, tokenId: rows[0].id } : null;
  }

  /** Of these API token ids, the ones not revoked. */
  async liveTokenIds(tokenIds: string[]): Promise<Set<string>> {
    if (tokenIds.length === 0) return new Set();
    const rows = await queryRows<Pick<ApiTokensRow, 'id'>>(
      this.ds,
      `SELECT id FROM api_tokens WHERE id = ANY($1::uuid[]) AND revoked_at IS NULL`,
      [tokenIds],
    );
    return new Set(rows.map((r) => r.id));
  }

  async findByIds(ids: string[]): Promise<User[]> {
    if (ids.length === 0) return [];
    return (await queryRows<UsersRow>(this.ds, `SELECT * FROM users WHERE id = ANY($1::uuid[])`, [ids])).map(toUser);
  }

  /** A ticket carries the credential it was issued with (its token version, expiry and API token). */
  async createTicket(ticket: {
    userId: string;
    ticketHash: string;
    ttlSecs: number;
    tokenVersion: number;
    credentialExpiresAt: Date | null;
    apiTokenId: string | null;
    loginSessionId: string | null;
  }): Promise<void> {
    await this.ds.query(`DELETE FROM ws_tickets WHERE expires_at < now() - interval '1 hour'`);
    await this.ds.query(
      `INSERT INTO ws_tickets (ticket_hash, user_id, expires_at, token_version, credential_expires_at, api_token_id,
                               login_session_id)
       VALUES ($1, $2, now() + $3 * interval '1 second', $4, $5, $6, $7)`,
      [
        ticket.ticketHash,
        ticket.userId,
        ticket.ttlSecs,
        ticket.tokenVersion,
        ticket.credentialExpiresAt,
        ticket.apiTokenId,
        ticket.loginSessionId,
      ],
    );
  }

  /** Consumes a single-use ticket: the first use wins, an expired one never works. */
  async consumeTicket(ticketHash: string): Promise<{
    userId: string;
    tokenVersion: number | null;
    credentialExpiresAt: Date | null;
    apiTokenId: string | null;
    loginSessionId: string | null;
  } | null> {
    const rows = await queryRows<
      Pick<WsTicketsRow, 'user_id' | 'token_version' | 'credential_expires_at' | 'api_token_id' | 'login_session_id'>
    >(
      this.ds,
      `UPDATE ws_tickets SET used_at = now() WHERE ticket_hash = $1 AND used_at IS NULL AND expires_at > now()
        RETURNING user_id, token_version, credential_expires_at, api_token_id, login_session_id`,
      [ticketHash],
    );
    const r = rows[0];
    return r
      ? {
          userId: r.user_id,
          tokenVersion: r.token_version,
          credentialExpiresAt: r.credential_expires_at,
          apiTokenId: r.api_token_id,
          loginSessionId: r.login_session_id,
        }
      : null;
  }
}
