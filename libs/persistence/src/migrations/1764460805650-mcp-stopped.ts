import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `mcp_servers.status` gains `stopped`, the status of a server registered (or changed) and not
 * started since: a stdio server runs only for an approved call, so `starting` — what such a row said
 * before — was never true of it. A runner sets `starting` when it begins to connect, then `ready` or
 * `error` (docs/tool-runner.md).
 */
export class McpStopped1764460805650 implements MigrationInterface {
  name = 'McpStopped1764460805650';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mcp_servers DROP CONSTRAINT mcp_servers_status_check`);
    await q.query(
      `ALTER TABLE mcp_servers ADD CONSTRAINT mcp_servers_status_check
         CHECK (status IN ('stopped', 'starting', 'ready', 'error', 'disabled'))`,
    );
    await q.query(`ALTER TABLE mcp_servers ALTER COLUMN status SET DEFAULT 'stopped'`);
    await q.query(`UPDATE mcp_servers SET status = 'stopped' WHERE status = 'starting'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`UPDATE mcp_servers SET status = 'starting' WHERE status = 'stopped'`);
    await q.query(`ALTER TABLE mcp_servers ALTER COLUMN status SET DEFAULT 'starting'`);
    await q.query(`ALTER TABLE mcp_servers DROP CONSTRAINT mcp_servers_status_check`);
    await q.query(
      `ALTER TABLE mcp_servers ADD CONSTRAINT mcp_servers_status_check
         CHECK (status IN ('starting', 'ready', 'error', 'disabled'))`,
    );
  }
}
