import { preparedRows, queryRows } from '@skald/persistence/query-rows';
import type { SessionLeasesRow } from '@skald/persistence';
import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';

export interface Lease {
  sessionId: string;
  owner: string;
  epoch: number;
  /** The lease was taken from an owner whose lease had expired (not released). */
  tookOver?: boolean;
}

/** SQL condition on `sessions s`: the session has work for a driver (see releaseAndCheckWork). */
export const SESSION_HAS_WORK = `(s.turn_state = 'running'
  OR (s.turn_state = 'parked' AND s.stop_requested_at IS NOT NULL)
  OR (s.turn_state = 'finished' AND EXISTS (SELECT 1 FROM session_inbox i WHERE i.session_id = s.id AND i.status = 'queued')))`;

/**
 * The lease take, as two CTEs (`lease_prev`, `lease_taken`) for a statement's WITH list — the one
 * definition `acquire` and the submit's statement (InboxRepository.submitToActive) both use. The
 * lease of session `session` (an SQL expression) goes to `owner` for `ttlMs` when it is free or
 * expired, judged on the row's latest version (ON CONFLICT locks it): the epoch grows by one.
 * `when` (an SQL condition) gates the attempt; a gated-out or refused take returns no row.
 * `lease_taken` returns the new `epoch` and `took_over` (an owner's expired lease was taken, not a
 * released one).
 */
export function leaseTake(p: { session: string; owner: string; ttlMs: string; when?: string }): string {
  return `lease_prev AS (SELECT owner FROM session_leases WHERE session_id = ${p.session}),
       lease_taken AS (
         INSERT INTO session_leases (session_id, owner, epoch, expires_at, acquired_at)
         SELECT ${p.session}, ${p.owner}, 1, now() + ${p.ttlMs} * interval '1 millisecond', now()
          ${p.when ? `WHERE ${p.when}` : ''}
         ON CONFLICT (session_id) DO UPDATE
           SET owner = EXCLUDED.owner, epoch = session_leases.epoch + 1, expires_at = EXCLUDED.expires_at, acquired_at = now()
           WHERE session_leases.owner IS NULL OR session_leases.expires_at <= now()
         RETURNING epoch, (SELECT owner IS NOT NULL FROM lease_prev) AS took_over)`;
}

/** The name of {@link RELEASE_AND_CHECK_SQL} (prepared once per connection; a new text needs a new name). */
export const RELEASE_AND_CHECK_NAME = 'skald_release_v1';

/** The lease released by its holder, and whether the session has work for a driver. */
export const RELEASE_AND_CHECK_SQL = `WITH released AS (
   UPDATE session_leases SET owner = NULL, expires_at = now()
    WHERE session_id = $1 AND owner = $2 AND epoch = $3)
 SELECT EXISTS (SELECT 1 FROM sessions s WHERE s.id = $1 AND ${SESSION_HAS_WORK}) AS work`;

/**
 * One driver per session across all replicas: a lease row with owner, fencing epoch and expiry,
 * judged by the database clock. Taking a lease (free or expired) always increments the epoch.
 */
@Injectable()
export class LeaseRepository {
  constructor(private readonly ds: Database) {}

  async acquire(sessionId: string, owner: string, ttlMs: number): Promise<Lease | null> {
    const rows = await queryRows<Pick<SessionLeasesRow, 'epoch'> & { took_over: boolean | null }>(
      this.ds,
      `WITH ${leaseTake({ session: '$1::uuid', owner: '$2::text', ttlMs: '$3::int' })}
       SELECT epoch, took_over FROM lease_taken`,
      [sessionId, owner, ttlMs],
    );
    const row = rows[0];
    return row ? { sessionId, owner, epoch: Number(row.epoch), tookOver: row.took_over === true } : null;
  }

  /** Extends the lease; false when it was lost (expired or taken over). */
  async renew(lease: Lease, ttlMs: number): Promise<boolean> {
    const rows = await queryRows<{ '?column?': number }>(
      this.ds,
      `UPDATE session_leases SET expires_at = now() + $4 * interval '1 millisecond'
        WHERE session_id = $1 AND owner = $2 AND epoch = $3 AND expires_at > now() RETURNING 1`,
      [lease.sessionId, lease.owner, lease.epoch, ttlMs],
    );
    return rows.length > 0;
  }

  /**
   * Releases the lease and, in the same statement, says whether the session has work for a driver
   * (a turn running, a parked turn with a stop, or a finished one with queued input): input queued
   * while the lease was held but after the holder's last look is taken at once. Sent by name: it
   * runs once a turn, and a plan of it per turn cost Postgres more than its execution.
   */
  async releaseAndCheckWork(lease: Lease): Promise<boolean> {
    const rows = await preparedRows<{ work: boolean }>(this.ds, RELEASE_AND_CHECK_NAME, RELEASE_AND_CHECK_SQL, [
      lease.sessionId,
      lease.owner,
      lease.epoch,
    ]);
    return rows[0]?.work === true;
  }

  async release(lease: Lease): Promise<void> {
    await this.ds.query(
      `UPDATE session_leases SET owner = NULL, expires_at = now() WHERE session_id = $1 AND owner = $2 AND epoch = $3`,
      [lease.sessionId, lease.owner, lease.epoch],
    );
  }
}
