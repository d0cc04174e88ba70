import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Session worker: where the gate judged a call's paths to land when it asked a human about it
 * (`tools.resolve`'s landing, a JSON array of paths or nulls), kept on the tool call with its
 * approval request so that the approved run is bound to it, after a park or a restart too.
 * Approval service: where the request's call lands when that is not the path it names
 * (`lands_at`), shown with it in the inbox.
 */
export class JudgedLanding1764460805600 implements MigrationInterface {
  name = 'JudgedLanding1764460805600';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tool_calls ADD COLUMN judged_landing jsonb`);
    await q.query(`ALTER TABLE approval_requests ADD COLUMN lands_at text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE approval_requests DROP COLUMN lands_at`);
    await q.query(`ALTER TABLE tool_calls DROP COLUMN judged_landing`);
  }
}
