import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tool runner: memory documents (`user-memory/…` per user, `shared-memory/…` deployment-wide) with
 * a full-text index, and the durable record of every tool call it ran, keyed by tool call id (the
 * start is written before the call runs, the reply when it ends).
 */
export class ToolRunner1764460800200 implements MigrationInterface {
  name = 'ToolRunner1764460800200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE memory_documents (
        id uuid PRIMARY KEY,
        scope text NOT NULL CHECK (scope IN ('user', 'shared')),
        user_id uuid,
        path text NOT NULL CHECK (length(path) BETWEEN 1 AND 512),
        content text NOT NULL,
        tsv tsvector GENERATED ALWAYS AS (
          setweight(to_tsvector('simple', regexp_replace(path, '[/._-]+', ' ', 'g')), 'A') ||
          setweight(to_tsvector('english', content), 'B')
        ) STORED,
        updated_by uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((scope = 'user') = (user_id IS NOT NULL))
      )`);
    await q.query(
      `CREATE UNIQUE INDEX memory_documents_user_path_key ON memory_documents (user_id, path) WHERE scope = 'user'`,
    );
    await q.query(
      `CREATE UNIQUE INDEX memory_documents_shared_path_key ON memory_documents (path) WHERE scope = 'shared'`,
    );
    await q.query(`CREATE INDEX memory_documents_tsv_idx ON memory_documents USING gin (tsv)`);

    await q.query(`
      CREATE TABLE tool_call_results (
        tool_call_id uuid PRIMARY KEY,
        user_id uuid NOT NULL,
        session_id uuid NOT NULL,
        tool_name text NOT NULL,
        status text NOT NULL CHECK (status IN ('running', 'done', 'failed', 'cancelled')),
        reply jsonb,
        runner text NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now(),
        heartbeat_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz,
        CHECK ((status = 'running') = (reply IS NULL))
      )`);
    await q.query(
      `CREATE INDEX tool_call_results_finished_idx ON tool_call_results (finished_at) WHERE finished_at IS NOT NULL`,
    );
    await q.query(`CREATE INDEX tool_call_results_running_idx ON tool_call_results (runner) WHERE status = 'running'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE tool_call_results`);
    await q.query(`DROP TABLE memory_documents`);
  }
}
