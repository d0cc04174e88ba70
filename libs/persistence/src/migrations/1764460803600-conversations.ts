import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Conversations: a session has an editable `title` (generated from its first exchange); a chat row
 * can be `superseded` (regenerate, edit-and-resend: kept in the debug tree, never projected); the
 * user's messages are searchable with Postgres full-text search (`simple` configuration: no
 * language's stemming is imposed on another's words). The index covers the first 20,000
 * characters of a message, so no message can exceed the size a tsvector may have.
 */
export class Conversations1764460803600 implements MigrationInterface {
  name = 'Conversations1764460803600';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ADD COLUMN title text`);
    await q.query(`ALTER TABLE sessions ADD COLUMN title_source text CHECK (title_source IN ('generated', 'user'))`);
    await q.query(`ALTER TABLE chat_history DROP CONSTRAINT chat_history_status_check`);
    await q.query(
      `ALTER TABLE chat_history ADD CONSTRAINT chat_history_status_check CHECK (status IN ('ok', 'failed', 'superseded'))`,
    );
    await q.query(`ALTER TABLE chat_history ADD COLUMN superseded_at timestamptz`);
    await q.query(
      `CREATE INDEX chat_history_search_idx ON chat_history
         USING gin (to_tsvector('simple'::regconfig, left(content, 20000)))
         WHERE role = 'user' AND NOT is_synthetic`,
    );
    await q.query(`ALTER TABLE llm_usage DROP CONSTRAINT llm_usage_purpose_check`);
    await q.query(
      `ALTER TABLE llm_usage ADD CONSTRAINT llm_usage_purpose_check CHECK (purpose IN ('round', 'compaction', 'title'))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM llm_usage WHERE purpose = 'title'`);
    await q.query(`ALTER TABLE llm_usage DROP CONSTRAINT llm_usage_purpose_check`);
    await q.query(
      `ALTER TABLE llm_usage ADD CONSTRAINT llm_usage_purpose_check CHECK (purpose IN ('round', 'compaction'))`,
    );
    await q.query(`DROP INDEX chat_history_search_idx`);
    await q.query(`ALTER TABLE chat_history DROP COLUMN superseded_at`);
    await q.query(`UPDATE chat_history SET status = 'failed' WHERE status = 'superseded'`);
    await q.query(`ALTER TABLE chat_history DROP CONSTRAINT chat_history_status_check`);
    await q.query(
      `ALTER TABLE chat_history ADD CONSTRAINT chat_history_status_check CHECK (status IN ('ok', 'failed'))`,
    );
    await q.query(`ALTER TABLE sessions DROP COLUMN title_source`);
    await q.query(`ALTER TABLE sessions DROP COLUMN title`);
  }
}
