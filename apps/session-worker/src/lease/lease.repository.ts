import { queryRows } from '@skald/persistence';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

export interface Lease {
  sessionId: string;
  owner: string;
  epoch: number;
  /** The lease was taken from an owner whose lease had expired (not released). */
  tookOver?: boolean;
}

/**
 * One driver per session across all replicas: a lease row with owner, fencing epoch and expiry,
 * judged by the database clock. Taking a lease (free or expired) always increments the epoch.
 */
@Injectable()
export class LeaseRepository {
  constructor(private readonly ds: DataSource) {}

  async acquire(sessionId: string, owner: string, ttlMs: number): Promise<Lease | null> {
    const rows: Array<{ epoch: string; took_over: boolean | null }> = await queryRows(
      this.ds,
      `WITH prev AS (SELECT owner FROM session_leases WHERE session_id = $1)
       INSERT INTO session_leases (session_id, owner, epoch, expires_at, acquired_at)
       VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond', now())
       ON CONFLICT (session_id) DO UPDATE
         SET owner = EXCLUDED.owner, epoch = session_leases.epoch + 1, expires_at = EXCLUDED.expires_at, acquired_at = now()
         WHERE session_leases.owner IS NULL OR session_leases.expires_at <= now()
       RETURNING epoch, (SELECT owner IS NOT NULL FROM prev) AS took_over`,
      [sessionId, owner, ttlMs],
    );
    const row = rows[0];
    return row ? { sessionId, owner, epoch: Number(row.epoch), tookOver: row.took_over === true } : null;
  }

  /** Extends the lease; false when it was lost (expired or taken over). */
  async renew(lease: Lease, ttlMs: number): Promise<boolean> {
    const rows: unknown[] = await queryRows(
      this.ds,
      `UPDATE session_leases SET expires_at = now() + $4 * interval '1 millisecond'
        WHERE session_id = $1 AND owner = $2 AND epoch = $3 AND expires_at > now() RETURNING 1`,
      [lease.sessionId, lease.owner, lease.epoch, ttlMs],
    );
    return rows.length > 0;
  }

  async release(lease: Lease): Promise<void> {
    await this.ds.query(
      `UPDATE session_leases SET owner = NULL, expires_at = now() WHERE session_id = $1 AND owner = $2 AND epoch = $3`,
      [lease.sessionId, lease.owner, lease.epoch],
    );
  }
}
