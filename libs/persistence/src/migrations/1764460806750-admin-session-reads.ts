import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `admin_session_reads` (the gateway's): every read an admin made of another user's conversation
 * (`GET /admin/sessions/{id}` and its history pages) — who read, whose conversation, which one,
 * what (`session`: its summary, `messages`: a history page) and when. Append-only: the gateway
 * inserts and nothing updates or deletes. No foreign keys: the record outlives the conversation and
 * both accounts.
 */
export class AdminSessionReads1764460806750 implements MigrationInterface {
  name = 'AdminSessionReads1764460806750';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE admin_session_reads (
        id bigserial PRIMARY KEY,
        admin_user_id uuid NOT NULL,
        owner_user_id uuid NOT NULL,
        session_id uuid NOT NULL,
        read text NOT NULL CHECK (read IN ('session', 'messages')),
        at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX admin_session_reads_session_idx ON admin_session_reads (session_id, at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE admin_session_reads`);
  }
}
