import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `openai_requests` (the gateway's): the requests of the OpenAI-compatible endpoint a retry may
 * attach to. A row is the latest request under one key (`request_key`, the SHA-256 of the request's
 * `Idempotency-Key`, or of the request itself: API token, model, named conversation, messages): the
 * conversation its message went to, the message's client id (the submit is idempotent on it) and
 * the conversation's last seq before it, where its answer is read from. `request_digest` is the
 * request's own SHA-256 (a key used again for another request is refused). Rows older than a day
 * are deleted as the user's next request is taken.
 */
export class OpenaiRequests1764460805900 implements MigrationInterface {
  name = 'OpenaiRequests1764460805900';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE openai_requests (
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        request_key text NOT NULL,
        request_digest text NOT NULL,
        session_id uuid NOT NULL,
        client_message_id text NOT NULL,
        after_seq bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (user_id, request_key)
      )`);
    await q.query(`CREATE INDEX openai_requests_age_idx ON openai_requests (user_id, created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE openai_requests`);
  }
}
