import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Scheduler: the truth of cron jobs and async tasks. BullMQ's job schedulers in Redis
 * mirror `scheduled_jobs`; a fire becomes a `job_runs` row before anything starts.
 * - `scheduled_jobs`: kind `cron` (a user's schedule), `async` (an `execute_task` mode async,
 *   idempotent on the spawning tool call id) or `tic` (the periodic system tick).
 * - `job_runs`: one row per fire. UNIQUE (job_id, due_at) fences a due time to one run whatever
 *   Redis does (a stalled-job retry, a flushed Redis, three replicas); the partial unique index
 *   keeps one open run per job (a fire while the previous run still runs is skipped).
 *   `delivered_at` is set after the ending reached its destination, so a crash between the
 *   terminal update and the delivery is retried by the sweep (the delivery is idempotent).
 * - `session_inbox.tool_result`: a system delivery into a conversation (`task_completed`,
 *   `read_notification`), `{tool_name, arguments_text, result}`.
 */
export class Scheduler1764460800800 implements MigrationInterface {
  name = 'Scheduler1764460800800';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE scheduled_jobs (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL,
        owner_role text NOT NULL DEFAULT 'user' CHECK (owner_role IN ('user', 'admin')),
        kind text NOT NULL CHECK (kind IN ('cron', 'async', 'tic')),
        title text NOT NULL,
        agent_id text NOT NULL,
        prompt text NOT NULL,
        cron text,
        timezone text,
        enabled boolean NOT NULL DEFAULT true,
        run_context jsonb NOT NULL DEFAULT '{}'::jsonb,
        next_run_at timestamptz,
        last_run_at timestamptz,
        parent_session_id uuid,
        parent_tool_call_id text,
        parent_source text,
        scratchpad_session_id uuid,
        client text,
        idempotency_key text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK (kind <> 'cron' OR cron IS NOT NULL),
        CHECK (kind <> 'async' OR (parent_session_id IS NOT NULL AND parent_tool_call_id IS NOT NULL))
      )`);
    await q.query(
      `CREATE UNIQUE INDEX scheduled_jobs_idempotency ON scheduled_jobs (user_id, idempotency_key) WHERE idempotency_key IS NOT NULL`,
    );
    await q.query(`CREATE INDEX scheduled_jobs_user_idx ON scheduled_jobs (user_id, kind, created_at)`);
    await q.query(`CREATE INDEX scheduled_jobs_parent_idx ON scheduled_jobs (parent_session_id) WHERE kind = 'async'`);
    await q.query(`
      CREATE TABLE job_runs (
        id uuid PRIMARY KEY,
        job_id uuid NOT NULL REFERENCES scheduled_jobs(id) ON DELETE CASCADE,
        user_id uuid NOT NULL,
        due_at timestamptz NOT NULL,
        attempt int NOT NULL DEFAULT 1,
        status text NOT NULL DEFAULT 'starting'
          CHECK (status IN ('starting', 'running', 'succeeded', 'failed', 'cancelled')),
        session_id uuid,
        runner text,
        heartbeat_at timestamptz,
        kill_requested_at timestamptz,
        started_at timestamptz NOT NULL DEFAULT now(),
        completed_at timestamptz,
        final_response text,
        partial_output text,
        error text,
        delivered_at timestamptz,
        UNIQUE (job_id, due_at)
      )`);
    await q.query(`CREATE UNIQUE INDEX job_runs_one_open ON job_runs (job_id) WHERE status IN ('starting', 'running')`);
    await q.query(`CREATE INDEX job_runs_open_idx ON job_runs (status) WHERE status IN ('starting', 'running')`);
    await q.query(
      `CREATE INDEX job_runs_undelivered_idx ON job_runs (completed_at) WHERE delivered_at IS NULL AND completed_at IS NOT NULL`,
    );
    await q.query(`CREATE INDEX job_runs_job_idx ON job_runs (job_id, started_at DESC)`);
    // Session worker: a system delivery (an async task's ending, a notification) waits in the
    // inbox like a message and enters as a synthetic assistant message with one completed call.
    await q.query(`ALTER TABLE session_inbox ADD COLUMN tool_result jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE session_inbox DROP COLUMN tool_result`);
    await q.query(`DROP TABLE job_runs`);
    await q.query(`DROP TABLE scheduled_jobs`);
  }
}
