import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tool runner: `mcp_servers.tools` is the tool list (JSON text of `McpToolDef[]`) a runner last read
 * from the server, so that the catalog can offer a stdio server's tools without starting it (a
 * stdio server runs only for a call that passed the approval gate). Null until its first start.
 */
export class McpServerTools1764460803000 implements MigrationInterface {
  name = 'McpServerTools1764460803000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mcp_servers ADD COLUMN tools text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mcp_servers DROP COLUMN tools`);
  }
}
