import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { queryRows } from '@skald/persistence/query-rows';
import type { ApprovalActionTokensRow } from '@skald/persistence';

/** What a used token acts for. */
export type UsedToken = Pick<ApprovalActionTokensRow, 'request_id' | 'user_id' | 'call_hash'>;

/** Tokens one mint sweeps away at most (expired a day ago or more). */
const SWEEP_BATCH = 100;

/** The action tokens, by hash only: the raw token never reaches the database. */
@Injectable()
export class ActionTokensRepository {
  constructor(private readonly ds: Database) {}

  async insert(t: {
    tokenHash: string;
    requestId: string;
    userId: string;
    callHash: string;
    ttlMs: number;
  }): Promise<Date> {
    const [row] = await queryRows<Pick<ApprovalActionTokensRow, 'expires_at'>>(
      this.ds,
      `INSERT INTO approval_action_tokens (token_hash, request_id, user_id, call_hash, expires_at)
       VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5::double precision / 1000))
       RETURNING expires_at`,
      [t.tokenHash, t.requestId, t.userId, t.callHash, t.ttlMs],
    );
    return row.expires_at;
  }

  /**
   * Uses a token: one statement, so of any number of concurrent redemptions exactly one gets the
   * row; null for an unknown, used or expired token (judged by the database clock).
   */
  async use(tokenHash: string): Promise<UsedToken | null> {
    const [row] = await queryRows<UsedToken>(
      this.ds,
      `UPDATE approval_action_tokens SET used_at = now()
        WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
        RETURNING request_id, user_id, call_hash`,
      [tokenHash],
    );
    return row ?? null;
  }

  /** Forgets tokens expired a day ago or more, a bounded batch at a time. */
  async sweep(): Promise<void> {
    await this.ds.query(
      `DELETE FROM approval_action_tokens WHERE token_hash IN (
         SELECT token_hash FROM approval_action_tokens WHERE expires_at < now() - interval '1 day' LIMIT $1)`,
      [SWEEP_BATCH],
    );
  }
}
