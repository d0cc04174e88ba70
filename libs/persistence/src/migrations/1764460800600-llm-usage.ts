import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Session worker, LLM accounting and pins:
 * - `llm_usage`: one row per model call that answered (rounds, sub-agents, compaction): tokens
 *   from the provider or estimated, cost at the client's prices. The per-user daily token budget
 *   is summed from it; it outlives the session it names (no foreign key: the ledger is kept).
 * - `chat_history` gets the cost, the estimate flag, the client and the model of an assistant row.
 * - `llm_client_pins`: the client a user pinned for a source (`/model`, `select_client`), durable.
 */
export class LlmUsage1764460800600 implements MigrationInterface {
  name = 'LlmUsage1764460800600';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE llm_usage (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        user_id uuid NOT NULL,
        session_id uuid,
        frame_id uuid,
        message_id uuid,
        purpose text NOT NULL CHECK (purpose IN ('round', 'compaction')),
        client text NOT NULL,
        model text NOT NULL,
        input_tokens integer NOT NULL CHECK (input_tokens >= 0),
        output_tokens integer NOT NULL CHECK (output_tokens >= 0),
        cached_input_tokens integer NOT NULL DEFAULT 0 CHECK (cached_input_tokens >= 0),
        estimated boolean NOT NULL DEFAULT false,
        cost_usd numeric(18, 6),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX llm_usage_user_day_idx ON llm_usage (user_id, created_at)`);
    await q.query(`CREATE INDEX llm_usage_session_idx ON llm_usage (session_id)`);
    await q.query(`
      ALTER TABLE chat_history
        ADD COLUMN cost_usd numeric(18, 6),
        ADD COLUMN tokens_estimated boolean NOT NULL DEFAULT false,
        ADD COLUMN llm_client text,
        ADD COLUMN llm_model text`);
    await q.query(`
      CREATE TABLE llm_client_pins (
        user_id uuid NOT NULL,
        source text NOT NULL,
        client text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (user_id, source)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS llm_client_pins`);
    await q.query(`
      ALTER TABLE chat_history
        DROP COLUMN IF EXISTS llm_model,
        DROP COLUMN IF EXISTS llm_client,
        DROP COLUMN IF EXISTS tokens_estimated,
        DROP COLUMN IF EXISTS cost_usd`);
    await q.query(`DROP TABLE IF EXISTS llm_usage`);
  }
}
