import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Session worker: per-user agents (an override of a built-in agent's prompt and / or meta, or an
 * agent of the user's own) and per-user settings (the home source that gets notifications,
 * `/sethome`).
 */
export class AgentsCatalog1764460800700 implements MigrationInterface {
  name = 'AgentsCatalog1764460800700';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE user_agents (
        user_id uuid NOT NULL,
        agent_id text NOT NULL CHECK (agent_id ~ '^[a-z0-9][a-z0-9_-]{0,47}$'),
        prompt text,
        meta jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (user_id, agent_id)
      )`);
    await q.query(`
      CREATE TABLE user_settings (
        user_id uuid PRIMARY KEY,
        home_source text NOT NULL CHECK (home_source ~ '^[a-z0-9-]{1,32}$'),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE user_settings`);
    await q.query(`DROP TABLE user_agents`);
  }
}
