import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `openai_conversations` (the gateway's): which conversation an OpenAI-compatible request
 * continues. A row is a conversation opened through `/v1/chat/completions`: the API token that
 * opened it, its model, and the exact message list the client holds after the last answer (as
 * JSON, with its SHA-256 `digest`, which a request whose earlier messages are that list is matched
 * on — exactly, per token). The session itself is the session worker's (no foreign key across
 * owners); a conversation deleted there is not continued.
 */
export class OpenaiConversations1764460805800 implements MigrationInterface {
  name = 'OpenaiConversations1764460805800';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE openai_conversations (
        session_id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        api_token_id uuid REFERENCES api_tokens(id) ON DELETE CASCADE,
        model text NOT NULL,
        messages jsonb NOT NULL,
        digest text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX openai_conversations_digest_idx ON openai_conversations (api_token_id, digest)`);
    await q.query(`CREATE INDEX openai_conversations_user_idx ON openai_conversations (user_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE openai_conversations`);
  }
}
