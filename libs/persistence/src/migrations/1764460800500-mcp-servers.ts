import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tool runner: each user's MCP servers. `env` and `headers` (credentials) are kept only as one
 * AES-256-GCM sealed JSON document (`secrets`); their keys are kept in clear so that the API can
 * list them. `status` / `error` / `tools_count` are the last outcome seen by any runner replica.
 */
export class McpServers1764460800500 implements MigrationInterface {
  name = 'McpServers1764460800500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE mcp_servers (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL,
        name text NOT NULL,
        transport text NOT NULL CHECK (transport IN ('stdio', 'http')),
        command text,
        args jsonb NOT NULL DEFAULT '[]',
        url text,
        network boolean NOT NULL DEFAULT true,
        enabled boolean NOT NULL DEFAULT true,
        env_keys text[] NOT NULL DEFAULT '{}',
        header_keys text[] NOT NULL DEFAULT '{}',
        secrets text,
        status text NOT NULL DEFAULT 'starting' CHECK (status IN ('starting', 'ready', 'error', 'disabled')),
        error text,
        tools_count integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (user_id, name)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS mcp_servers`);
  }
}
