import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Single sign-on (the gateway's tables).
 * `oidc_flows`: one sign-in under way, from the redirect to the provider until its callback (single use, deleted
 * when the callback takes it): the SHA-256 of its `state` (the key), the provider, the nonce and PKCE verifier, the
 * SHA-256 of the browser binding kept in a cookie, where to return, and until when it may come back.
 * `oidc_handoffs`: a finished sign-in waiting for the web client to take its session (single use, short-lived).
 * `user_identities`: the account an identity of a provider signs in to, (provider_id, subject) unique; `oidc_groups`
 * holds the group names the provider's groups claim named at the last sign-in.
 */
export class OidcSignIn1764460806800 implements MigrationInterface {
  name = 'OidcSignIn1764460806800';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE oidc_flows (
        state_hash text PRIMARY KEY,
        provider_id text NOT NULL,
        nonce text NOT NULL,
        code_verifier text NOT NULL,
        binding_hash text NOT NULL,
        return_to text NOT NULL,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX oidc_flows_expires_idx ON oidc_flows (expires_at)`);
    await q.query(`
      CREATE TABLE oidc_handoffs (
        handoff_hash text PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        provider_id text NOT NULL,
        return_to text NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX oidc_handoffs_expires_idx ON oidc_handoffs (expires_at)`);
    await q.query(`
      CREATE TABLE user_identities (
        provider_id text NOT NULL,
        subject text NOT NULL,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        email text,
        oidc_groups text[] NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        last_login_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (provider_id, subject)
      )`);
    await q.query(`CREATE INDEX user_identities_user_idx ON user_identities (user_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE user_identities`);
    await q.query(`DROP TABLE oidc_handoffs`);
    await q.query(`DROP TABLE oidc_flows`);
  }
}
