import { Queryable, queryRows } from '@skald/persistence/query-rows';
import { runFromJson, type RunJson, SweepResult, timestampFromJson } from './job-rows';

/** An ended run is redelivered by the sweep once it has been undelivered this long. */
export const UNDELIVERED_AFTER = '2 seconds';
/** An async job without a run is enqueued again by the sweep once it is this old. */
export const ORPHAN_AFTER_MS = 5_000;

/**
 * The watcher's sweep in one statement: heartbeat this runner's open runs, adopt
 * the open runs whose runner went silent for `staleMs`, and read what needs work —
 * - `mine`: this runner's open runs after both updates, by start time (the heartbeat's and the
 *   adoption's RETURNING: the statement's own snapshot predates its updates);
 * - `adopted`: the ids adopted by this sweep;
 * - `undelivered`: ended runs whose delivery did not happen (a crash between the terminal write
 *   and the submit, a failed submit), ended more than `UNDELIVERED_AFTER` ago, oldest first;
 * - `orphans`: async jobs older than `ORPHAN_AFTER_MS` that never got a run (the scheduler died
 *   between the insert and the enqueue);
 * - `wakeInMs`: ms until the earliest moment something not yet due becomes due by time alone
 *   (another runner's open run goes stale, an ended run's delivery is overdue, a run-less async
 *   job is old enough), measured on Postgres' clock; null when nothing can. Negative when
 *   something is due now.
 * The adoption skips this runner's own rows (one statement must not update a row twice; the
 * heartbeat refreshes them, as the separate heartbeat before the adoption did). Row locks and
 * READ COMMITTED's re-check of the `WHERE` after a concurrent update keep an adoption exclusive:
 * of two replicas adopting one run, the second finds it fresh and leaves it.
 */
export async function sweepRuns(
  db: Queryable,
  runner: string,
  staleMs: number,
  limits: { undelivered: number; orphans: number },
): Promise<SweepResult> {
  const [row] = await queryRows<{
    mine: RunJson[];
    adopted: string[];
    undelivered: RunJson[];
    orphans: Array<{ id: string; created_at: string }>;
    wake_ms: number | null;
  }>(
    db,
    `WITH beat AS (
         UPDATE job_runs SET heartbeat_at = now() WHERE runner = $1 AND status IN ('starting', 'running') RETURNING *
       ), adopted AS (
         UPDATE job_runs SET runner = $1, heartbeat_at = now(), attempt = attempt + 1
          WHERE status IN ('starting', 'running') AND runner IS DISTINCT FROM $1
            AND heartbeat_at < now() - ($2::int * interval '1 millisecond')
         RETURNING *
       ), mine AS (
         SELECT * FROM beat UNION ALL SELECT * FROM adopted
       ), ended AS (
         SELECT * FROM job_runs WHERE delivered_at IS NULL AND completed_at IS NOT NULL
       ), undelivered AS (
         SELECT * FROM ended WHERE completed_at < now() - interval '${UNDELIVERED_AFTER}'
          ORDER BY completed_at, id LIMIT $3
       ), runless AS (
         SELECT j.id, j.created_at FROM scheduled_jobs j
          WHERE j.kind = 'async' AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id)
       ), orphans AS (
         SELECT id, created_at FROM runless WHERE created_at < now() - (${ORPHAN_AFTER_MS} * interval '1 millisecond')
          ORDER BY created_at, id LIMIT $4
       )
       SELECT
         (SELECT coalesce(jsonb_agg(to_jsonb(m) ORDER BY m.started_at, m.id), '[]') FROM mine m) AS mine,
         (SELECT coalesce(jsonb_agg(a.id), '[]') FROM adopted a) AS adopted,
         (SELECT coalesce(jsonb_agg(to_jsonb(u) ORDER BY u.completed_at, u.id), '[]') FROM undelivered u) AS undelivered,
         (SELECT coalesce(jsonb_agg(to_jsonb(o) ORDER BY o.created_at, o.id), '[]') FROM orphans o) AS orphans,
         extract(epoch FROM least(
           (SELECT min(heartbeat_at) FROM job_runs
             WHERE status IN ('starting', 'running') AND runner IS DISTINCT FROM $1)
             + ($2::int * interval '1 millisecond'),
           (SELECT min(completed_at) FROM ended) + interval '${UNDELIVERED_AFTER}',
           (SELECT min(created_at) FROM runless) + (${ORPHAN_AFTER_MS} * interval '1 millisecond')
         ) - now())::float8 * 1000 AS wake_ms`,
    [runner, staleMs, limits.undelivered, limits.orphans],
  );
  if (!row) throw new Error('the sweep returned no row');
  return {
    mine: row.mine.map(runFromJson),
    adopted: row.adopted,
    undelivered: row.undelivered.map(runFromJson),
    orphans: row.orphans.map((o) => ({ id: o.id, created_at: timestampFromJson(o.created_at) })),
    wakeInMs: row.wake_ms === null ? null : Number(row.wake_ms),
  };
}
