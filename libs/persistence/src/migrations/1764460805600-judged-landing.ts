import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Session worker: where the gate judged a call's paths to land when it asked a human about it
 * (`tools.resolve`'s landing, a JSON array of paths or nulls), kept on the tool call with its
 * approval request so that the approved run is bound to it, after a park or a restart too.
 */
export class JudgedLanding1764460805600 implements MigrationInterface {
  name = 'JudgedLanding1764460805600';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tool_calls ADD COLUMN judged_landing jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tool_calls DROP COLUMN judged_landing`);
  }
}
