import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { queryRows } from '@skald/persistence/query-rows';
import type { LoginSessionsRow, UsersRow } from '@skald/persistence';
import { toUser, type User } from './users.repository';

/** Live sessions one user may hold at once; a new one beyond them ends the oldest (the table stays bounded). */
export const LOGIN_SESSIONS_PER_USER = 100;
/** Expired rows one new session deletes on its way in (a bounded statement; the next sign-ins take the rest). */
const SWEEP_BATCH = 500;

/**
 * The server-side half of a session JWT: a row per session, keyed by the JWT's `sid`. Postgres is the truth every
 * gateway replica reads with the user on each request; a JWT whose row is gone (signed out, over the cap, expired)
 * is refused.
 */
@Injectable()
export class LoginSessionsRepository {
  constructor(private readonly ds: Database) {}

  /**
   * Records a session. On the way: up to {@link SWEEP_BATCH} expired sessions of anyone are deleted, and the user's
   * sessions beyond the newest {@link LOGIN_SESSIONS_PER_USER} end.
   */
  async start(s: { id: string; userId: string; providerId: string | null; expiresAt: Date }): Promise<void> {
    await this.ds.query(
      `DELETE FROM login_sessions WHERE id IN
         (SELECT id FROM login_sessions WHERE expires_at < now() ORDER BY expires_at LIMIT ${SWEEP_BATCH})`,
    );
    await this.ds.query(`INSERT INTO login_sessions (id, user_id, provider_id, expires_at) VALUES ($1, $2, $3, $4)`, [
      s.id,
      s.userId,
      s.providerId,
      s.expiresAt,
    ]);
    await this.ds.query(
      `DELETE FROM login_sessions WHERE user_id = $1 AND id NOT IN
         (SELECT id FROM login_sessions WHERE user_id = $1 ORDER BY created_at DESC, id LIMIT ${LOGIN_SESSIONS_PER_USER})`,
      [s.userId],
    );
  }

  /** Ends the caller's own session; false when it was not live. */
  async end(scope: { userId: string; sessionId: string }): Promise<boolean> {
    const rows = await queryRows<Pick<LoginSessionsRow, 'id'>>(
      this.ds,
      `DELETE FROM login_sessions WHERE id = $1 AND user_id = $2 RETURNING id`,
      [scope.sessionId, scope.userId],
    );
    return rows.length > 0;
  }

  /**
   * The user and whether this session of theirs is live (unexpired, not ended), in one statement: the check costs
   * the request no second round trip. Null when the user does not exist.
   */
  async userWithSession(userId: string, sessionId: string): Promise<{ user: User; sessionLive: boolean } | null> {
    const [r] = await queryRows<UsersRow & { session_live: boolean }>(
      this.ds,
      `SELECT u.*, EXISTS (SELECT 1 FROM login_sessions s
                            WHERE s.id = $2 AND s.user_id = u.id AND s.expires_at > now()) AS session_live
         FROM users u WHERE u.id = $1`,
      [userId, sessionId],
    );
    if (!r) return null;
    const { session_live, ...user } = r;
    return { user: toUser(user), sessionLive: session_live };
  }

  /** Of these sessions, the ones live. */
  async liveIds(sessionIds: string[]): Promise<Set<string>> {
    if (sessionIds.length === 0) return new Set();
    const rows = await queryRows<Pick<LoginSessionsRow, 'id'>>(
      this.ds,
      `SELECT id FROM login_sessions WHERE id = ANY($1::uuid[]) AND expires_at > now()`,
      [sessionIds],
    );
    return new Set(rows.map((r) => r.id));
  }
}
