import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Database } from '@skald/persistence/database';
import { McpServerStatus, McpToolDef, McpTransport, unknownTransport } from '@skald/contracts';
import { queryRows } from '@skald/persistence/query-rows';
import type { McpServersRow } from '@skald/persistence';

/** Largest tool list kept for the catalog (JSON text); a longer one is not kept (the server must run to list it). */
const MAX_STORED_TOOLS_CHARS = 1024 * 1024;

export type McpStatus = McpServerStatus;

/** What a stored server runs (stdio) or where it is (http); credentials by key only. */
export type StoredMcpConfig =
  | { transport: 'stdio'; command: string; args: string[]; network: boolean; envKeys: string[] }
  | { transport: 'http'; url: string; headerKeys: string[] };

/** One user's MCP server as stored; `secrets` is the sealed `{env, headers}` document. */
export type StoredMcpServer = StoredMcpConfig & {
  id: string;
  userId: string;
  name: string;
  enabled: boolean;
  secrets: string | null;
  status: McpStatus;
  error: string | null;
  toolsCount: number;
  /** The tool list last read from the server by any replica; null before its first start. */
  tools: McpToolDef[] | null;
  updatedAt: Date;
};

export type NewMcpServer = StoredMcpConfig & { userId: string; name: string; secrets: string | null };

/** The columns a change may set (a patch names only its transport's; the service checks it). */
export interface McpServerChange {
  enabled?: boolean;
  command?: string;
  args?: string[];
  url?: string;
  network?: boolean;
  envKeys?: string[];
  headerKeys?: string[];
  secrets?: string | null;
}

/** A server as stored: `transport` and `status` as the values the schema allows, `args` as written (a JSON array). */
type Row = Omit<McpServersRow, 'transport' | 'args' | 'status'> & {
  transport: McpTransport;
  args: string[];
  status: McpStatus;
};

/** `mcp_servers`: every query is scoped by the owner. */
@Injectable()
export class McpServersRepository {
  constructor(private readonly db: Database) {}

  async list(userId: string): Promise<StoredMcpServer[]> {
    const rows = await queryRows<Row>(this.db, `SELECT * FROM mcp_servers WHERE user_id = $1 ORDER BY name`, [userId]);
    return rows.map(toServer);
  }

  async find(userId: string, name: string): Promise<StoredMcpServer | null> {
    const rows = await queryRows<Row>(this.db, `SELECT * FROM mcp_servers WHERE user_id = $1 AND name = $2`, [
      userId,
      name,
    ]);
    return rows[0] ? toServer(rows[0]) : null;
  }

  async count(userId: string): Promise<number> {
    const [row] = await queryRows<{ n: number }>(
      this.db,
      `SELECT count(*)::int AS n FROM mcp_servers WHERE user_id = $1`,
      [userId],
    );
    return row?.n ?? 0;
  }

  /** Null when the user already has a server of that name. */
  async create(s: NewMcpServer): Promise<StoredMcpServer | null> {
    const cols = columnsOf(s);
    const rows = await queryRows<Row>(
      this.db,
      `INSERT INTO mcp_servers (id, user_id, name, transport, command, args, url, network, env_keys, header_keys, secrets)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11)
       ON CONFLICT (user_id, name) DO NOTHING RETURNING *`,
      [
        randomUUID(),
        s.userId,
        s.name,
        s.transport,
        cols.command,
        JSON.stringify(cols.args),
        cols.url,
        cols.network,
        cols.envKeys,
        cols.headerKeys,
        s.secrets,
      ],
    );
    return rows[0] ? toServer(rows[0]) : null;
  }

  /**
   * Changes one server of the user; `reconfigured`: what runs changed, so its status, error and
   * tool list are those of a server not started since. Null when the user has no such server.
   */
  async update(
    userId: string,
    name: string,
    fields: McpServerChange,
    reconfigured: boolean,
  ): Promise<StoredMcpServer | null> {
    const cols: { [C in keyof Row]?: unknown } = {
      enabled: fields.enabled,
      command: fields.command,
      args: fields.args === undefined ? undefined : JSON.stringify(fields.args),
      url: fields.url,
      network: fields.network,
      env_keys: fields.envKeys,
      header_keys: fields.headerKeys,
      secrets: fields.secrets,
    };
    const sets: string[] = [];
    const params: unknown[] = [userId, name];
    for (const [col, v] of Object.entries(cols)) {
      if (v === undefined) continue;
      params.push(v);
      sets.push(`${col} = $${params.length}${col === 'args' ? '::jsonb' : ''}`);
    }
    if (reconfigured) sets.push(`status = 'stopped', error = NULL, tools = NULL, tools_count = 0`);
    sets.push('updated_at = now()');
    const rows = await queryRows<Row>(
      this.db,
      `UPDATE mcp_servers SET ${sets.join(', ')} WHERE user_id = $1 AND name = $2 RETURNING *`,
      params,
    );
    return rows[0] ? toServer(rows[0]) : null;
  }

  async delete(userId: string, name: string): Promise<boolean> {
    const rows = await queryRows<Pick<Row, 'id'>>(
      this.db,
      `DELETE FROM mcp_servers WHERE user_id = $1 AND name = $2 RETURNING id`,
      [userId, name],
    );
    return rows.length > 0;
  }

  /** A replica begins to connect (its outcome follows by `setStatus`); only for that row (same id). */
  async markStarting(id: string): Promise<void> {
    await this.db.query(`UPDATE mcp_servers SET status = 'starting', error = NULL, updated_at = now() WHERE id = $1`, [
      id,
    ]);
  }

  /**
   * The last outcome of connecting (any replica); only for the row that was connected (same id).
   * `tools` (when given) replaces the kept tool list.
   */
  async setStatus(
    id: string,
    status: McpStatus,
    error: string | null,
    toolsCount: number,
    tools?: McpToolDef[],
  ): Promise<void> {
    const text = tools === undefined ? undefined : JSON.stringify(tools);
    const kept = text !== undefined && text.length <= MAX_STORED_TOOLS_CHARS ? text : null;
    await this.db.query(
      `UPDATE mcp_servers SET status = $2, error = $3, tools_count = $4,
         tools = CASE WHEN $5::boolean THEN $6 ELSE tools END, updated_at = now() WHERE id = $1`,
      [id, status, error, toolsCount, tools !== undefined, kept],
    );
  }
}

/**
 * The columns of a configuration: the other transport's are empty (null, `[]`, the column defaults);
 * `network` of an http server is false.
 */
function columnsOf(c: StoredMcpConfig): {
  command: string | null;
  args: string[];
  url: string | null;
  network: boolean;
  envKeys: string[];
  headerKeys: string[];
} {
  const transport = c.transport;
  switch (transport) {
    case 'stdio':
      return { command: c.command, args: c.args, url: null, network: c.network, envKeys: c.envKeys, headerKeys: [] };
    case 'http':
      return { command: null, args: [], url: c.url, network: false, envKeys: [], headerKeys: c.headerKeys };
    default:
      return unknownTransport(transport);
  }
}

/** A row's configuration, read by its transport (the creation checked that it has what that needs). */
function configOf(r: Row): StoredMcpConfig {
  const transport = r.transport;
  switch (transport) {
    case 'stdio':
      return { transport, command: r.command ?? '', args: r.args, network: r.network, envKeys: r.env_keys };
    case 'http':
      return { transport, url: r.url ?? '', headerKeys: r.header_keys };
    default:
      return unknownTransport(transport);
  }
}

function toServer(r: Row): StoredMcpServer {
  return {
    ...configOf(r),
    id: r.id,
    userId: r.user_id,
    name: r.name,
    enabled: r.enabled,
    secrets: r.secrets,
    status: r.status,
    error: r.error,
    toolsCount: r.tools_count,
    tools: parseTools(r.tools),
    updatedAt: r.updated_at,
  };
}

/** The kept tool list; anything that does not parse as one is treated as none (the server must run to list it). */
function parseTools(text: string | null): McpToolDef[] | null {
  if (text === null) return null;
  try {
    const parsed = McpToolDef.array().safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
