import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Gateway: a WebSocket ticket carries the credential it was issued with, so that a socket opened
 * with it ends when that credential would (its JWT expiry, its token version, its API token):
 * - `token_version`: the user's token version at issue; a role, password or disable change since
 *   makes the ticket worthless (a ticket without one never redeems).
 * - `credential_expires_at`: the issuing JWT's expiry (null for an API token).
 * - `api_token_id`: the issuing API token, whose revocation ends the socket too.
 */
export class WsTicketCredential1764460800900 implements MigrationInterface {
  name = 'WsTicketCredential1764460800900';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE ws_tickets
        ADD COLUMN token_version integer,
        ADD COLUMN credential_expires_at timestamptz,
        ADD COLUMN api_token_id uuid REFERENCES api_tokens(id) ON DELETE CASCADE`);
    await q.query(`CREATE INDEX ws_tickets_user_idx ON ws_tickets (user_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX ws_tickets_user_idx`);
    await q.query(`
      ALTER TABLE ws_tickets
        DROP COLUMN api_token_id,
        DROP COLUMN credential_expires_at,
        DROP COLUMN token_version`);
  }
}
