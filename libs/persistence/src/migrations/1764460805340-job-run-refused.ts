import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `job_runs.status` gains `refused`: a fire the scheduler fenced but did not start, because the
 * job's owner, read from the gateway at that fire, is disabled or deleted (or the job's RunContext
 * sets a field only an admin sets and its owner is no longer one). `error` says why; nothing is
 * delivered (docs/scheduler.md).
 */
export class JobRunRefused1764460805340 implements MigrationInterface {
  name = 'JobRunRefused1764460805340';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE job_runs DROP CONSTRAINT job_runs_status_check`);
    await q.query(
      `ALTER TABLE job_runs ADD CONSTRAINT job_runs_status_check
         CHECK (status IN ('starting', 'running', 'succeeded', 'failed', 'cancelled', 'refused'))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`UPDATE job_runs SET status = 'failed' WHERE status = 'refused'`);
    await q.query(`ALTER TABLE job_runs DROP CONSTRAINT job_runs_status_check`);
    await q.query(
      `ALTER TABLE job_runs ADD CONSTRAINT job_runs_status_check
         CHECK (status IN ('starting', 'running', 'succeeded', 'failed', 'cancelled'))`,
    );
  }
}
