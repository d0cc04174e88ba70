import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Any string survives storage. JSON documents that carry text from a model, a tool or a user are
 * kept as JSON text (`jsonb` rejects `\u0000` and lone surrogate escapes; `text` keeps them as
 * ASCII escapes). Plus the two retry bounds: a turn's consecutive commit failures of one step
 * (`sessions.commit_failures`, keyed by the turn and the last committed seq) and the re-asks of a
 * call whose approved preview could not be reproduced (`tool_calls.stale_reasks`).
 */
export class PoisonSafe1764460801000 implements MigrationInterface {
  name = 'PoisonSafe1764460801000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE session_events ALTER COLUMN payload TYPE text USING payload::text`);
    await q.query(`ALTER TABLE approval_requests ALTER COLUMN preview TYPE text USING preview::text`);
    await q.query(`ALTER TABLE approval_requests ALTER COLUMN question TYPE text USING question::text`);
    await q.query(`ALTER TABLE tool_call_results ALTER COLUMN reply TYPE text USING reply::text`);
    await q.query(`ALTER TABLE sessions ADD COLUMN commit_failures integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE sessions ADD COLUMN commit_failure_key text`);
    await q.query(`ALTER TABLE tool_calls ADD COLUMN stale_reasks integer NOT NULL DEFAULT 0`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tool_calls DROP COLUMN stale_reasks`);
    await q.query(`ALTER TABLE sessions DROP COLUMN commit_failure_key`);
    await q.query(`ALTER TABLE sessions DROP COLUMN commit_failures`);
    // Fails on a value jsonb cannot hold (a NUL or a lone surrogate escape): such rows must go first.
    await q.query(`ALTER TABLE tool_call_results ALTER COLUMN reply TYPE jsonb USING reply::jsonb`);
    await q.query(`ALTER TABLE approval_requests ALTER COLUMN question TYPE jsonb USING question::jsonb`);
    await q.query(`ALTER TABLE approval_requests ALTER COLUMN preview TYPE jsonb USING preview::jsonb`);
    await q.query(`ALTER TABLE session_events ALTER COLUMN payload TYPE jsonb USING payload::jsonb`);
  }
}
