import type { JobRunContext } from '@skald/contracts';

// The scheduler's rows (`scheduled_jobs`, `job_runs`) as the repository returns them, and the
// parsing of runs read as JSON aggregates.

export type JobKind = 'cron' | 'async' | 'tic';

export interface JobRow {
  id: string;
  user_id: string;
  owner_role: 'user' | 'admin';
  kind: JobKind;
  title: string;
  agent_id: string;
  prompt: string;
  cron: string | null;
  timezone: string | null;
  enabled: boolean;
  run_context: JobRunContext;
  next_run_at: Date | null;
  last_run_at: Date | null;
  parent_session_id: string | null;
  parent_tool_call_id: string | null;
  parent_source: string | null;
  scratchpad_session_id: string | null;
  client: string | null;
  created_at: Date;
}

export interface RunRow {
  id: string;
  job_id: string;
  user_id: string;
  due_at: Date;
  attempt: number;
  status: 'starting' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'refused';
  session_id: string | null;
  runner: string | null;
  kill_requested_at: Date | null;
  started_at: Date;
  completed_at: Date | null;
  final_response: string | null;
  partial_output: string | null;
  error: string | null;
  delivered_at: Date | null;
}

/** What one sweep found (`JobsRepository.sweep`). */
export interface SweepResult {
  mine: RunRow[];
  adopted: string[];
  undelivered: RunRow[];
  orphans: Array<{ id: string; created_at: Date }>;
  wakeInMs: number | null;
}

const RUN_TIMESTAMPS = [
  'due_at',
  'started_at',
  'completed_at',
  'kill_requested_at',
  'delivered_at',
  'heartbeat_at',
] as const;

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
export function runFromJson(o: Record<string, unknown>): RunRow {
  const run = { ...o } as Record<string, unknown>;
  for (const k of RUN_TIMESTAMPS) if (typeof run[k] === 'string') run[k] = timestampFromJson(run[k]);
  return run as unknown as RunRow;
}

export type FenceResult = { kind: 'started'; runId: string } | { kind: 'duplicate' } | { kind: 'busy' };

/** The columns of a `JobRow`, in its order. */
export const JOB_COLS = `id, user_id, owner_role, kind, title, agent_id, prompt, cron, timezone, enabled, run_context,
  next_run_at, last_run_at, parent_session_id, parent_tool_call_id, parent_source, scratchpad_session_id, client, created_at`;
