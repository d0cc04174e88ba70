import { queryRows } from '@skald/persistence/query-rows';
import type { DataSource } from 'typeorm';
import type { Lease } from '../lease/lease.repository';

/** What `TurnSlots.reserve` found. */
export type Reservation = 'reserved' | 'at_cap' | 'not_ours';

/**
 * The per-user cap on running turns (`USER_CAPS.concurrent_turns`, migration 1764460805500), as the
 * driver uses it: a slot reserved before a turn starts from the inbox, let go when the driver ends
 * without starting it, and the doorbell of one held-back session of the user. Every write is fenced
 * by the driver's lease. Nothing here fails a turn: no slot leaves the session with its work.
 */
export class TurnSlots {
  constructor(private readonly ds: DataSource) {}

  /**
   * Reserves a slot for the turn the driver is about to start in this (finished) session:
   * `reserved` when the session already holds one (reserved by a driver that stopped before the
   * turn started) or the user holds fewer than `cap` (judged on the counter row's latest version,
   * under its lock); `at_cap` when the user holds `cap` or more (the session's input waits);
   * `not_ours` when the lease is no longer this driver's or the turn is not finished.
   */
  async reserve(lease: Lease, cap: number): Promise<Reservation> {
    const rows = await queryRows<{ ok: boolean; mine: boolean }>(
      this.ds,
      `WITH me AS (
         SELECT s.id, s.user_id, s.holds_turn_slot FROM sessions s
          WHERE s.id = $1::uuid AND s.turn_state = 'finished'
            AND EXISTS (SELECT 1 FROM session_leases l
                         WHERE l.session_id = s.id AND l.owner = $2::text AND l.epoch = $3::bigint)),
       slot AS (
         INSERT INTO user_turns_running AS c (user_id, running)
         SELECT me.user_id, 0 FROM me WHERE NOT me.holds_turn_slot
         ON CONFLICT (user_id) DO UPDATE SET running = c.running WHERE c.running < $4::int
         RETURNING 1),
       took AS (
         UPDATE sessions SET holds_turn_slot = true
          WHERE id = (SELECT id FROM me) AND EXISTS (SELECT 1 FROM slot)
         RETURNING 1)
       SELECT COALESCE((SELECT holds_turn_slot FROM me), false) OR EXISTS (SELECT 1 FROM took) AS ok,
              EXISTS (SELECT 1 FROM me) AS mine`,
      [lease.sessionId, lease.owner, lease.epoch, cap],
    );
    const r = rows[0];
    return r?.ok === true ? 'reserved' : r?.mine === true ? 'at_cap' : 'not_ours';
  }

  /**
   * Lets go of a slot reserved for a turn that did not start (the session's turn is not running):
   * true when one was held. A running turn keeps its slot (recovery continues it).
   */
  async letGo(lease: Lease): Promise<boolean> {
    const rows = await queryRows<{ '?column?': number }>(
      this.ds,
      `UPDATE sessions s SET holds_turn_slot = false
        WHERE s.id = $1::uuid AND s.holds_turn_slot AND s.turn_state <> 'running'
          AND EXISTS (SELECT 1 FROM session_leases l
                       WHERE l.session_id = s.id AND l.owner = $2::text AND l.epoch = $3::bigint)
       RETURNING 1`,
      [lease.sessionId, lease.owner, lease.epoch],
    );
    return rows.length > 0;
  }

  /**
   * One session of the user held back by the cap, if any: its turn finished, queued input, no slot
   * and no live driver — the one whose oldest queued item is oldest.
   */
  async waiting(userId: string, except: string): Promise<string | null> {
    const rows = await queryRows<{ id: string }>(
      this.ds,
      `SELECT s.id FROM sessions s
         JOIN LATERAL (SELECT min(i.ord) AS at FROM session_inbox i
                        WHERE i.session_id = s.id AND i.status = 'queued') q ON q.at IS NOT NULL
        WHERE s.user_id = $1::uuid AND s.id <> $2::uuid AND s.turn_state = 'finished' AND NOT s.holds_turn_slot
          AND NOT EXISTS (SELECT 1 FROM session_leases l
                           WHERE l.session_id = s.id AND l.owner IS NOT NULL AND l.expires_at > now())
        ORDER BY q.at LIMIT 1`,
      [userId, except],
    );
    return rows[0]?.id ?? null;
  }
}
