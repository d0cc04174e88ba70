import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `groups` and `group_members` (the session worker's, beside the agents catalog): groups of users that an admin
 * manages (`source` 'admin') or that the identity provider's group claim brings at each login
 * (`source` 'idp'). A group names the agents and LLM clients its members may use (null: all) and
 * the approval security groups (rule scopes) their sessions run under. A membership has its own
 * `source`: the login sync replaces a user's 'idp' memberships and never touches 'admin' ones.
 *
 * `user_id` has no foreign key to `users` (the gateway's), like the worker's other tables.
 *
 * Names are unique without regard to case (`lower(name)`). Limits that come later (a budget) are
 * columns of `groups` (null: no limit), combined over a user's groups like the allow-lists are.
 */
export class Groups1764460806850 implements MigrationInterface {
  name = 'Groups1764460806850';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE groups (
        id uuid PRIMARY KEY,
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
        description text NOT NULL DEFAULT '',
        allowed_agents text[],
        allowed_llm_clients text[],
        security_groups text[] NOT NULL DEFAULT '{}',
        source text NOT NULL CHECK (source IN ('admin', 'idp')),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX groups_name_key ON groups (lower(name))`);
    await q.query(`
      CREATE TABLE group_members (
        group_id uuid NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
        user_id uuid NOT NULL,
        source text NOT NULL CHECK (source IN ('admin', 'idp')),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (group_id, user_id, source)
      )`);
    await q.query(`CREATE INDEX group_members_user_idx ON group_members (user_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE group_members`);
    await q.query(`DROP TABLE groups`);
  }
}
