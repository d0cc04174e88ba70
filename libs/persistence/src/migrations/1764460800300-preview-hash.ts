import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Session worker: the hash of the file a write's approval preview was computed from, kept on the
 * tool call so that a run approved after a park or a restart still refuses a file changed since.
 */
export class PreviewHash1764460800300 implements MigrationInterface {
  name = 'PreviewHash1764460800300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tool_calls ADD COLUMN preview_hash text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tool_calls DROP COLUMN preview_hash`);
  }
}
