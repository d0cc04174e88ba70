import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ApiTokenEntity, UserEntity, queryRows } from '@skald/persistence';

/** Users, API tokens and WS tickets: the gateway's own tables. */
@Injectable()
export class UsersRepository {
  constructor(private readonly ds: DataSource) {}

  findByEmail(email: string): Promise<UserEntity | null> {
    return this.ds
      .getRepository(UserEntity)
      .createQueryBuilder('u')
      .where('lower(u.email) = lower(:email)', { email })
      .getOne();
  }

  findById(id: string): Promise<UserEntity | null> {
    return this.ds.getRepository(UserEntity).findOneBy({ id });
  }

  list(): Promise<UserEntity[]> {
    return this.ds.getRepository(UserEntity).find({ order: { createdAt: 'ASC' } });
  }

  /** Inserts a user; null if the email is taken. */
  async create(user: { email: string; passwordHash: string; role: 'user' | 'admin' }): Promise<UserEntity | null> {
    const id = randomUUID();
    const rows: unknown[] = await queryRows(
      this.ds,
      `INSERT INTO users (id, email, password_hash, role) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING id`,
      [id, user.email, user.passwordHash, user.role],
    );
    return rows.length > 0 ? this.findById(id) : null;
  }

  /** Applies a change; a role, password or disable change bumps the token version (ending tokens). */
  async update(
    id: string,
    patch: { role?: 'user' | 'admin'; disabled?: boolean; passwordHash?: string },
  ): Promise<UserEntity | null> {
    const rows: unknown[] = await queryRows(
      this.ds,
      `UPDATE users SET role = COALESCE($2, role), disabled = COALESCE($3, disabled), password_hash = COALESCE($4, password_hash),
              token_version = token_version + 1, updated_at = now()
        WHERE id = $1 RETURNING id`,
      [id, patch.role ?? null, patch.disabled ?? null, patch.passwordHash ?? null],
    );
    return rows.length > 0 ? this.findById(id) : null;
  }

  async createToken(userId: string, name: string, tokenHash: string): Promise<ApiTokenEntity> {
    const id = randomUUID();
    await this.ds.query(`INSERT INTO api_tokens (id, user_id, name, token_hash) VALUES ($1, $2, $3, $4)`, [
      id,
      userId,
      name,
      tokenHash,
    ]);
    return (await this.ds.getRepository(ApiTokenEntity).findOneBy({ id })) as ApiTokenEntity;
  }

  listTokens(userId: string): Promise<ApiTokenEntity[]> {
    return this.ds
      .getRepository(ApiTokenEntity)
      .find({ where: { userId, revokedAt: undefined }, order: { createdAt: 'ASC' } })
      .then((ts) => ts.filter((t) => !t.revokedAt));
  }

  async revokeToken(scope: { userId: string; tokenId: string }): Promise<boolean> {
    const rows: unknown[] = await queryRows(
      this.ds,
      `UPDATE api_tokens SET revoked_at = now() WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL RETURNING id`,
      [scope.tokenId, scope.userId],
    );
    return rows.length > 0;
  }

  /** The live token's user, touching `last_used_at` at most once a minute. */
  async userByTokenHash(tokenHash: string): Promise<UserEntity | null> {
    const rows: Array<{ user_id: string }> = await queryRows(
      this.ds,
      `UPDATE api_tokens SET last_used_at = CASE WHEN last_used_at IS NULL OR last_used_at < now() - interval '1 minute' THEN now() ELSE last_used_at END
        WHERE token_hash = $1 AND revoked_at IS NULL RETURNING user_id`,
      [tokenHash],
    );
    return rows[0] ? this.findById(rows[0].user_id) : null;
  }

  async createTicket(userId: string, ticketHash: string, ttlSecs: number): Promise<void> {
    await this.ds.query(`DELETE FROM ws_tickets WHERE expires_at < now() - interval '1 hour'`);
    await this.ds.query(
      `INSERT INTO ws_tickets (ticket_hash, user_id, expires_at) VALUES ($1, $2, now() + $3 * interval '1 second')`,
      [ticketHash, userId, ttlSecs],
    );
  }

  /** Consumes a single-use ticket: the first use wins, an expired one never works. */
  async consumeTicket(ticketHash: string): Promise<string | null> {
    const rows: Array<{ user_id: string }> = await queryRows(
      this.ds,
      `UPDATE ws_tickets SET used_at = now() WHERE ticket_hash = $1 AND used_at IS NULL AND expires_at > now() RETURNING user_id`,
      [ticketHash],
    );
    return rows[0]?.user_id ?? null;
  }
}
