import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import type { Role, JobRunContext } from '@skald/contracts';
import { Queryable, queryRows } from '@skald/persistence/query-rows';
import type { JobRunsRow, ScheduledJobsRow } from '@skald/persistence';
import type { JobEnding } from './job-ending';
import { FenceResult, JOB_COLS, JOB_COLUMNS, JobKind, JobRow, RunRow, SweepResult, TIC_INSERT } from './job-rows';
import { sweepRuns } from './jobs-sweep';

/** An async task of a parent session with its latest run (the run's columns null when it has none). */
type ParentTask = { job_id: string } & Pick<ScheduledJobsRow, 'title' | 'agent_id'> &
  Pick<JobRunsRow, 'session_id' | 'started_at' | 'error'> & { status: JobRunsRow['status'] | null };

/** Scheduled jobs and their runs. Every user-facing method takes the owner. */
@Injectable()
export class JobsRepository {
  constructor(private readonly ds: Database) {}

  async createCron(o: {
    userId: string;
    role: Role;
    title: string;
    prompt: string;
    agentId: string;
    cron: string;
    timezone: string;
    enabled: boolean;
    runContext: JobRunContext;
    nextRunAt: Date | null;
    kind?: 'cron' | 'tic';
  }): Promise<string> {
    return this.insertCron(o, this.ds);
  }

  /**
   * A cron job, refused when the user already owns `cap` cron jobs. One transaction under a
   * per-user lock: parallel creates cannot pass the cap together.
   */
  async createCronCapped(
    o: Parameters<JobsRepository['createCron']>[0],
    cap: number,
  ): Promise<{ kind: 'created'; id: string } | { kind: 'capped'; have: number }> {
    return this.ds.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`cron-cap/${o.userId}`]);
      const [r] = await queryRows<{ n: string }>(
        tx,
        `SELECT count(*) AS n FROM scheduled_jobs WHERE user_id = $1 AND kind = 'cron'`,
        [o.userId],
      );
      const have = Number(r?.n ?? 0);
      if (have >= cap) return { kind: 'capped' as const, have };
      return { kind: 'created' as const, id: await this.insertCron(o, tx) };
    });
  }

  private async insertCron(o: Parameters<JobsRepository['createCron']>[0], db: Queryable): Promise<string> {
    const id = randomUUID();
    await db.query(
      `INSERT INTO scheduled_jobs (id, user_id, owner_role, kind, title, agent_id, prompt, cron, timezone, enabled, run_context, next_run_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      [
        id,
        o.userId,
        o.role,
        o.kind ?? 'cron',
        o.title,
        o.agentId,
        o.prompt,
        o.cron,
        o.timezone,
        o.enabled,
        JSON.stringify(o.runContext),
        o.nextRunAt,
      ],
    );
    return id;
  }

  /**
   * An async task, idempotent by (user, idempotency key = the spawning tool call id), refused when
   * the user already has `cap` open tasks. One transaction under a per-user lock, so parallel
   * submits cannot pass the cap together; a repeated key returns the first job even at the cap.
   */
  async createAsync(
    o: {
      userId: string;
      role: Role;
      idempotencyKey: string;
      title: string;
      agentId: string;
      prompt: string;
      parentSessionId: string;
      parentToolCallId: string;
      parentSource: string;
      scratchpadSessionId: string;
      client: string | null;
    },
    cap: number,
  ): Promise<{ kind: 'created' | 'duplicate'; id: string } | { kind: 'capped'; open: number }> {
    return this.ds.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`async-cap/${o.userId}`]);
      const existing = await queryRows<Pick<ScheduledJobsRow, 'id'>>(
        tx,
        `SELECT id FROM scheduled_jobs WHERE user_id = $1 AND idempotency_key = $2`,
        [o.userId, o.idempotencyKey],
      );
      if (existing[0]) return { kind: 'duplicate' as const, id: existing[0].id };
      const open = await this.countOpenAsync(o.userId, tx);
      if (open >= cap) return { kind: 'capped' as const, open };
      const id = randomUUID();
      await tx.query(
        `INSERT INTO scheduled_jobs (id, user_id, owner_role, kind, title, agent_id, prompt, enabled, parent_session_id,
           parent_tool_call_id, parent_source, scratchpad_session_id, client, idempotency_key)
         VALUES ($1, $2, $3, 'async', $4, $5, $6, true, $7, $8, $9, $10, $11, $12)`,
        [
          id,
          o.userId,
          o.role,
          o.title,
          o.agentId,
          o.prompt,
          o.parentSessionId,
          o.parentToolCallId,
          o.parentSource,
          o.scratchpadSessionId,
          o.client,
          o.idempotencyKey,
        ],
      );
      return { kind: 'created' as const, id };
    });
  }

  /**
   * The caller's tic job (the periodic system tick), created on first use on the schedule `cron`
   * (UTC; null: created disabled).
   */
  async ensureTic(o: {
    userId: string;
    role: Role;
    agentId: string;
    prompt: string;
    cron: string | null;
    nextRunAt: Date | null;
  }): Promise<string> {
    await this.ds.query(
      `INSERT INTO scheduled_jobs (${TIC_INSERT.join(', ')})
       VALUES ($1, $2, $3, 'tic', 'System tick', $4, $5, $6, 'UTC', $7, $8, 'tic')
       ON CONFLICT (user_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`,
      [randomUUID(), o.userId, o.role, o.agentId, o.prompt, o.cron, o.cron !== null, o.nextRunAt],
    );
    const [row] = await queryRows<Pick<ScheduledJobsRow, 'id'>>(
      this.ds,
      `SELECT id FROM scheduled_jobs WHERE user_id = $1 AND idempotency_key = 'tic' AND kind = 'tic'`,
      [o.userId],
    );
    if (!row) throw new Error('tic job vanished');
    return row.id;
  }

  /**
   * System: the tic job of each of `users` that has none, on the schedule `cron` (UTC; null:
   * created disabled), in one statement; an existing one is left as it is. How many were created.
   */
  async ensureTics(o: {
    users: { userId: string; role: Role }[];
    agentId: string;
    prompt: string;
    cron: string | null;
    nextRunAt: Date | null;
  }): Promise<number> {
    if (o.users.length === 0) return 0;
    const rows = await queryRows<Pick<ScheduledJobsRow, 'id'>>(
      this.ds,
      `INSERT INTO scheduled_jobs (${TIC_INSERT.join(', ')})
       SELECT gen_random_uuid(), u.user_id, u.role, 'tic', 'System tick', $3, $4, $5, 'UTC', $6, $7, 'tic'
         FROM unnest($1::uuid[], $2::text[]) AS u(user_id, role)
       ON CONFLICT (user_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
       RETURNING id`,
      [
        o.users.map((u) => u.userId),
        o.users.map((u) => u.role),
        o.agentId,
        o.prompt,
        o.cron,
        o.cron !== null,
        o.nextRunAt,
      ],
    );
    return rows.length;
  }

  /**
   * System: every tic job follows the configured schedule (UTC; null: off). A job whose schedule
   * changes gets its next fire from `nextRunAt`.
   */
  async applyTicSchedule(cron: string | null, nextRunAt: Date | null): Promise<void> {
    await this.ds.query(
      `UPDATE scheduled_jobs SET cron = $1, timezone = 'UTC', enabled = $2, next_run_at = $3
        WHERE kind = 'tic' AND (cron IS DISTINCT FROM $1 OR enabled IS DISTINCT FROM $2)`,
      [cron, cron !== null, nextRunAt],
    );
  }

  /** Open async runs of a user (the per-user concurrency cap). */
  async countOpenAsync(userId: string, db: Queryable = this.ds): Promise<number> {
    const [r] = await queryRows<{ n: string }>(
      db,
      `SELECT count(*) AS n FROM scheduled_jobs j
        WHERE j.user_id = $1 AND j.kind = 'async'
          AND (NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id)
               OR EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id AND r.status IN ('starting', 'running')))`,
      [userId],
    );
    return Number(r?.n ?? 0);
  }

  async findJob(q: { userId: string; jobId: string; kind?: JobKind }): Promise<JobRow | null> {
    const rows = await queryRows<JobRow>(
      this.ds,
      `SELECT ${JOB_COLS} FROM scheduled_jobs WHERE id = $1 AND user_id = $2 AND ($3::text IS NULL OR kind = $3)`,
      [q.jobId, q.userId, q.kind ?? null],
    );
    return rows[0] ?? null;
  }

  /** System: a job by id (the runner and the sweeper act for every user). */
  async jobById(jobId: string): Promise<JobRow | null> {
    const rows = await queryRows<JobRow>(this.ds, `SELECT ${JOB_COLS} FROM scheduled_jobs WHERE id = $1`, [jobId]);
    return rows[0] ?? null;
  }

  async listCron(userId: string): Promise<Array<JobRow & { running_session_id: string | null }>> {
    return queryRows<JobRow & { running_session_id: string | null }>(
      this.ds,
      `SELECT ${JOB_COLUMNS.map((c) => `j.${c}`).join(', ')},
              (SELECT r.session_id FROM job_runs r WHERE r.job_id = j.id AND r.status IN ('starting', 'running') LIMIT 1) AS running_session_id
         FROM scheduled_jobs j WHERE j.user_id = $1 AND j.kind = 'cron' ORDER BY j.created_at`,
      [userId],
    );
  }

  async updateCron(
    q: { userId: string; jobId: string },
    patch: Partial<{
      title: string;
      prompt: string;
      agent_id: string;
      cron: string;
      timezone: string;
      enabled: boolean;
      run_context: JobRunContext;
      next_run_at: Date | null;
    }>,
  ): Promise<boolean> {
    const sets: string[] = [];
    const params: unknown[] = [q.jobId, q.userId];
    for (const [k, v] of Object.entries(patch)) {
      if (v === undefined) continue;
      params.push(k === 'run_context' ? JSON.stringify(v) : v);
      sets.push(`${k} = $${params.length}`);
    }
    sets.push('updated_at = now()');
    const rows = await queryRows<Pick<ScheduledJobsRow, 'id'>>(
      this.ds,
      `UPDATE scheduled_jobs SET ${sets.join(', ')} WHERE id = $1 AND user_id = $2 AND kind = 'cron' RETURNING id`,
      params,
    );
    return rows.length > 0;
  }

  async deleteJob(q: { userId: string; jobId: string }): Promise<boolean> {
    const rows = await queryRows<Pick<ScheduledJobsRow, 'id'>>(
      this.ds,
      `DELETE FROM scheduled_jobs WHERE id = $1 AND user_id = $2 AND kind = 'cron' RETURNING id`,
      [q.jobId, q.userId],
    );
    return rows.length > 0;
  }

  /** System: every enabled schedule (cron and tic), what BullMQ must mirror. */
  async enabledSchedules(): Promise<JobRow[]> {
    return queryRows<JobRow>(
      this.ds,
      `SELECT ${JOB_COLS} FROM scheduled_jobs WHERE kind IN ('cron', 'tic') AND enabled ORDER BY created_at`,
    );
  }

  /** Moves `next_run_at` forward only (replicas racing write the same or a later value). */
  async advanceNextRun(jobId: string, next: Date | null): Promise<void> {
    await this.ds.query(
      `UPDATE scheduled_jobs SET next_run_at = $2
        WHERE id = $1 AND (next_run_at IS NULL OR $2::timestamptz IS NULL OR next_run_at < $2)`,
      [jobId, next],
    );
  }

  /**
   * The fence: one run per (job, due time), and one open run per job. Whatever BullMQ does (a
   * stalled-job retry, a flushed Redis, three replicas), only the caller that inserted the row
   * starts a session.
   */
  async fenceRun(o: { jobId: string; userId: string; dueAt: Date; runner: string }): Promise<FenceResult> {
    const id = randomUUID();
    try {
      const rows = await queryRows<Pick<JobRunsRow, 'id'>>(
        this.ds,
        `INSERT INTO job_runs (id, job_id, user_id, due_at, status, runner, heartbeat_at)
         VALUES ($1, $2, $3, $4, 'starting', $5, now())
         ON CONFLICT (job_id, due_at) DO NOTHING RETURNING id`,
        [id, o.jobId, o.userId, o.dueAt, o.runner],
      );
      if (!rows[0]) return { kind: 'duplicate' };
    } catch (e) {
      if ((e as { code?: string }).code === '23505') return { kind: 'busy' };
      if ((e as { code?: string }).code === '23503') return { kind: 'duplicate' }; // the job was deleted
      throw e;
    }
    await this.ds.query(`UPDATE scheduled_jobs SET last_run_at = now() WHERE id = $1`, [o.jobId]);
    return { kind: 'started', runId: id };
  }

  async markRunning(runId: string, sessionId: string): Promise<void> {
    await this.ds.query(
      `UPDATE job_runs SET status = 'running', session_id = $2 WHERE id = $1 AND status IN ('starting', 'running')`,
      [runId, sessionId],
    );
  }

  async runById(runId: string): Promise<RunRow | null> {
    const rows = await queryRows<RunRow>(this.ds, `SELECT * FROM job_runs WHERE id = $1`, [runId]);
    return rows[0] ?? null;
  }

  /** The terminal write: conditional, so an ending is recorded (and then delivered) once. */
  async finishRun(runId: string, e: JobEnding): Promise<boolean> {
    const rows = await queryRows<Pick<JobRunsRow, 'id'>>(
      this.ds,
      `UPDATE job_runs SET status = $2, final_response = $3, partial_output = $4, error = $5, completed_at = now()
        WHERE id = $1 AND status IN ('starting', 'running') RETURNING id`,
      [runId, e.status, e.finalResponse, e.partialOutput, e.error],
    );
    return rows.length > 0;
  }

  /**
   * A fenced fire that starts nothing (its owner may not act): terminal, with the reason, and
   * marked delivered (there is no one to tell). Conditional like `finishRun`.
   */
  async refuseRun(runId: string, reason: string): Promise<boolean> {
    const rows = await queryRows<Pick<JobRunsRow, 'id'>>(
      this.ds,
      `UPDATE job_runs SET status = 'refused', error = $2, completed_at = now(), delivered_at = now()
        WHERE id = $1 AND status IN ('starting', 'running') RETURNING id`,
      [runId, reason],
    );
    return rows.length > 0;
  }

  /** The owner's role as read at the last fire (a demotion or promotion since the job was made). */
  async setOwnerRole(jobId: string, role: Role): Promise<void> {
    await this.ds.query(`UPDATE scheduled_jobs SET owner_role = $2 WHERE id = $1`, [jobId, role]);
  }

  async markDelivered(runId: string): Promise<void> {
    await this.ds.query(`UPDATE job_runs SET delivered_at = now() WHERE id = $1`, [runId]);
  }

  async listRuns(q: { userId: string; jobId?: string }): Promise<RunRow[]> {
    return queryRows<RunRow>(
      this.ds,
      `SELECT r.* FROM job_runs r JOIN scheduled_jobs j ON j.id = r.job_id
        WHERE r.user_id = $1 AND j.kind = 'cron' AND ($2::uuid IS NULL OR r.job_id = $2)
        ORDER BY r.started_at DESC LIMIT 100`,
      [q.userId, q.jobId ?? null],
    );
  }

  /** Ended cron runs of a user, newest first (the notification history), after the `before` run. */
  async endedCronRuns(q: {
    userId: string;
    before?: string;
    limit: number;
  }): Promise<Array<RunRow & Pick<ScheduledJobsRow, 'title'>>> {
    return queryRows<RunRow & Pick<ScheduledJobsRow, 'title'>>(
      this.ds,
      `SELECT r.*, j.title FROM job_runs r JOIN scheduled_jobs j ON j.id = r.job_id
        WHERE r.user_id = $1 AND j.kind = 'cron' AND r.completed_at IS NOT NULL
          AND ($2::uuid IS NULL OR (r.completed_at, r.id) <
               (SELECT b.completed_at, b.id FROM job_runs b WHERE b.id = $2 AND b.user_id = $1))
        ORDER BY r.completed_at DESC, r.id DESC LIMIT $3`,
      [q.userId, q.before ?? null, q.limit],
    );
  }

  /** The task strip: running async tasks of a parent session + failures of the last 30 minutes. */
  async tasksOfParent(q: { userId: string; sessionId: string }): Promise<ParentTask[]> {
    return queryRows<ParentTask>(
      this.ds,
      `SELECT j.id AS job_id, j.title, j.agent_id, r.session_id, r.status, coalesce(r.started_at, j.created_at) AS started_at, r.error
         FROM scheduled_jobs j
         LEFT JOIN LATERAL (SELECT * FROM job_runs x WHERE x.job_id = j.id ORDER BY x.started_at DESC LIMIT 1) r ON true
        WHERE j.user_id = $1 AND j.kind = 'async' AND j.parent_session_id = $2
          AND (r.id IS NULL OR r.status IN ('starting', 'running')
               OR (r.status IN ('failed', 'cancelled') AND r.completed_at > now() - interval '30 minutes'))
        ORDER BY j.created_at`,
      [q.userId, q.sessionId],
    );
  }

  /** The watcher's sweep (see `sweepRuns`): this runner's open runs, the adopted ones, and what needs work. */
  sweep(runner: string, staleMs: number, limits = { undelivered: 20, orphans: 50 }): Promise<SweepResult> {
    return sweepRuns(this.ds, runner, staleMs, limits);
  }

  /** The open run of a job (for kill). */
  async openRunOf(q: { userId: string; jobId: string }): Promise<RunRow | null> {
    const rows = await queryRows<RunRow>(
      this.ds,
      `SELECT * FROM job_runs WHERE job_id = $1 AND user_id = $2 AND status IN ('starting', 'running')`,
      [q.jobId, q.userId],
    );
    return rows[0] ?? null;
  }

  async requestKill(runId: string): Promise<void> {
    await this.ds.query(`UPDATE job_runs SET kill_requested_at = now() WHERE id = $1`, [runId]);
  }
}
