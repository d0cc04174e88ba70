import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { Queryable, queryRows } from '@skald/persistence/query-rows';
import type { ApprovalBypassesRow } from '@skald/persistence';
import { BypassScope } from '../rules/gate-input';

export interface StoredBypass {
  id: string;
  sessionId: string;
  userId: string;
  scope: BypassScope;
  expiresAt: Date | null;
  createdAt: Date;
}

/** A bypass as it is listed; `scope` holds the BypassScope it was created with. */
type Row = Pick<ApprovalBypassesRow, 'id' | 'session_id' | 'user_id' | 'expires_at' | 'created_at'> & {
  scope: BypassScope;
};

const ACTIVE = `revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`;

/**
 * Session bypasses live in Postgres so that every replica sees one the moment it is committed;
 * expiry is judged by the database clock. `userId: null` means an admin acting on any user's.
 */
@Injectable()
export class BypassesRepository {
  constructor(private readonly ds: Database) {}

  async activeScopes(sessionId: string): Promise<BypassScope[]> {
    const rows = await queryRows<Pick<Row, 'scope'>>(
      this.ds,
      `SELECT scope FROM approval_bypasses WHERE session_id = $1 AND ${ACTIVE}`,
      [sessionId],
    );
    return rows.map((r) => r.scope);
  }

  async create(
    b: { sessionId: string; userId: string; createdBy: string; scope: BypassScope; secs: number | undefined },
    db: Queryable = this.ds,
  ): Promise<string> {
    const id = randomUUID();
    await db.query(
      `INSERT INTO approval_bypasses (id, session_id, user_id, created_by, scope, expires_at)
       VALUES ($1, $2, $3, $4, $5::jsonb, CASE WHEN $6::int > 0 THEN now() + make_interval(secs => $6::int) END)`,
      [id, b.sessionId, b.userId, b.createdBy, JSON.stringify(b.scope), b.secs ?? 0],
    );
    return id;
  }

  async listActive(scope: { userId: string | null; sessionId?: string }): Promise<StoredBypass[]> {
    const rows = await queryRows<Row>(
      this.ds,
      `SELECT id, session_id, user_id, scope, expires_at, created_at FROM approval_bypasses
       WHERE ${ACTIVE} AND ($1::uuid IS NULL OR user_id = $1) AND ($2::uuid IS NULL OR session_id = $2)
       ORDER BY created_at DESC LIMIT 500`,
      [scope.userId, scope.sessionId ?? null],
    );
    return rows.map((r) => ({
      id: r.id,
      sessionId: r.session_id,
      userId: r.user_id,
      scope: r.scope,
      expiresAt: r.expires_at,
      createdAt: r.created_at,
    }));
  }

  async revoke(scope: { userId: string | null; id: string }): Promise<boolean> {
    const rows = await queryRows<Pick<ApprovalBypassesRow, 'id'>>(
      this.ds,
      `UPDATE approval_bypasses SET revoked_at = now()
       WHERE id = $1 AND revoked_at IS NULL AND ($2::uuid IS NULL OR user_id = $2) RETURNING id`,
      [scope.id, scope.userId],
    );
    return rows.length > 0;
  }

  async revokeSession(scope: { userId: string | null; sessionId: string }): Promise<number> {
    const rows = await queryRows<Pick<ApprovalBypassesRow, 'id'>>(
      this.ds,
      `UPDATE approval_bypasses SET revoked_at = now()
       WHERE session_id = $1 AND revoked_at IS NULL AND ($2::uuid IS NULL OR user_id = $2) RETURNING id`,
      [scope.sessionId, scope.userId],
    );
    return rows.length;
  }
}
