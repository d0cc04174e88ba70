import type { JobRunContext } from '@skald/contracts';
import type { JobRunsRow, ScheduledJobsRow } from '@skald/persistence';

// The scheduler's rows (`scheduled_jobs`, `job_runs`) as the repository returns them, and the
// parsing of runs read as JSON aggregates.

/** The kinds `scheduled_jobs.kind`'s CHECK constraint allows. */
export type JobKind = ScheduledJobsRow['kind'];

/** The columns a job is read with. */
export const JOB_COLUMNS = [
  'id',
  'user_id',
  'owner_role',
  'kind',
  'title',
  'agent_id',
  'prompt',
  'cron',
  'timezone',
  'enabled',
  'run_context',
  'next_run_at',
  'last_run_at',
  'parent_session_id',
  'parent_tool_call_id',
  'parent_source',
  'scratchpad_session_id',
  'client',
  'created_at',
] as const satisfies readonly (keyof ScheduledJobsRow)[];

/** A job as read: `run_context` as written (the checked text columns are their unions in the generated row). */
export type JobRow = Omit<Pick<ScheduledJobsRow, (typeof JOB_COLUMNS)[number]>, 'run_context'> & {
  run_context: JobRunContext;
};

/** A run as read. */
export type RunRow = JobRunsRow;

/** What one sweep found (`JobsRepository.sweep`). */
export interface SweepResult {
  mine: RunRow[];
  adopted: string[];
  undelivered: RunRow[];
  orphans: Array<{ id: string; created_at: Date }>;
  wakeInMs: number | null;
}

/** The timestamp columns of a run (`to_jsonb` writes them as text). */
type RunTimestamp = 'due_at' | 'started_at' | 'completed_at' | 'kill_requested_at' | 'delivered_at' | 'heartbeat_at';

/** A run as `to_jsonb` writes it: its timestamps as text. */
export type RunJson = Omit<RunRow, RunTimestamp> & {
  [K in RunTimestamp]: null extends RunRow[K] ? string | null : string;
};

/**
 * A `timestamptz` as `to_jsonb` writes it (`2026-12-02T11:57:37.123456+00:00`) to the Date the
 * pg driver makes of the same value: microseconds truncated to milliseconds, exactly.
 */
export function timestampFromJson(s: string): Date {
  const m =
    /^(\d{4,})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:Z|([+-])(\d{2})(?::?(\d{2}))?(?::?(\d{2}))?)$/.exec(
      s,
    );
  if (!m) throw new Error(`not a timestamptz: ${s}`);
  const n = (i: number) => Number(m[i] ?? 0);
  const ms = Number(((m[7] ?? '') + '000').slice(0, 3));
  const offsetS = m[8] ? (m[8] === '-' ? -1 : 1) * (n(9) * 3600 + n(10) * 60 + n(11)) : 0;
  const d = new Date(Date.UTC(n(1), n(2) - 1, n(3), n(4), n(5), n(6), ms) - offsetS * 1000);
  if (Number.isNaN(d.getTime())) throw new Error(`not a timestamptz: ${s}`);
  return d;
}

/** A `job_runs` row as `to_jsonb` writes it, with its timestamps as the pg driver gives them. */
export function runFromJson(o: RunJson): RunRow {
  const at = (t: string | null) => (t === null ? null : timestampFromJson(t));
  return {
    ...o,
    due_at: timestampFromJson(o.due_at),
    started_at: timestampFromJson(o.started_at),
    completed_at: at(o.completed_at),
    kill_requested_at: at(o.kill_requested_at),
    delivered_at: at(o.delivered_at),
    heartbeat_at: at(o.heartbeat_at),
  };
}
export type FenceResult = { kind: 'started'; runId: string } | { kind: 'duplicate' } | { kind: 'busy' };

/** The columns of a `JobRow`, in its order. */
export const JOB_COLS = JOB_COLUMNS.join(', ');

/** The columns a tic job is inserted with (one user's, or many users' at once). */
export const TIC_INSERT = [
  'id',
  'user_id',
  'owner_role',
  'kind',
  'title',
  'agent_id',
  'prompt',
  'cron',
  'timezone',
  'enabled',
  'next_run_at',
  'idempotency_key',
] as const satisfies readonly (keyof ScheduledJobsRow)[];
