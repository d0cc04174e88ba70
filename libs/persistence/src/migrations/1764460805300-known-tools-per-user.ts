import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `known_tools` per tenant: the tool names discovered in a user's rounds (their MCP tools) are kept
 * under that user (`user_id`), so the catalogue a user is shown lists only tools offered to them, and
 * each user's names are bounded (`KNOWN_TOOLS_PER_USER`, the least recently offered evicted; the
 * index serves that trim). Rows from before had no owner: they are dropped (the catalogue is
 * rebuilt from the next rounds' offers).
 */
export class KnownToolsPerUser1764460805300 implements MigrationInterface {
  name = 'KnownToolsPerUser1764460805300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM known_tools`);
    await q.query(`ALTER TABLE known_tools DROP CONSTRAINT known_tools_pkey`);
    await q.query(`ALTER TABLE known_tools ADD COLUMN user_id uuid NOT NULL`);
    await q.query(`ALTER TABLE known_tools ADD PRIMARY KEY (user_id, name)`);
    await q.query(`CREATE INDEX known_tools_user_seen ON known_tools (user_id, last_seen_at DESC, name)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX known_tools_user_seen`);
    await q.query(`DELETE FROM known_tools`);
    await q.query(`ALTER TABLE known_tools DROP CONSTRAINT known_tools_pkey`);
    await q.query(`ALTER TABLE known_tools DROP COLUMN user_id`);
    await q.query(`ALTER TABLE known_tools ADD PRIMARY KEY (name)`);
  }
}
