import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Server-side sign-in sessions (the gateway's).
 * `login_sessions`: one row per live session JWT (its `sid` claim is the row's id): whose, through which single
 * sign-on provider if any, until when. A JWT whose row is gone is refused: signing out deletes the row; expired rows
 * are deleted when a new session starts.
 * `ws_tickets.login_session_id`: the session a ticket was issued under (null for an API token's), so a socket opened
 * with it ends when the session does.
 * `oidc_flows.address_key`: the client address (as login throttling counts it) that started the flow, so one address
 * holds a bounded number of flows.
 */
export class LoginSessions1764460807100 implements MigrationInterface {
  name = 'LoginSessions1764460807100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE login_sessions (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        provider_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX login_sessions_user_idx ON login_sessions (user_id, created_at)`);
    await q.query(`CREATE INDEX login_sessions_expires_idx ON login_sessions (expires_at)`);
    await q.query(`ALTER TABLE ws_tickets ADD COLUMN login_session_id uuid`);
    await q.query(`ALTER TABLE oidc_flows ADD COLUMN address_key text NOT NULL DEFAULT ''`);
    await q.query(`CREATE INDEX oidc_flows_address_idx ON oidc_flows (address_key, expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX oidc_flows_address_idx`);
    await q.query(`ALTER TABLE oidc_flows DROP COLUMN address_key`);
    await q.query(`ALTER TABLE ws_tickets DROP COLUMN login_session_id`);
    await q.query(`DROP TABLE login_sessions`);
  }
}
