import type { McpServerDto, McpToolDef } from '@skald/contracts';
import type { StoredMcpServer } from './mcp-servers.repository';
import { mcpWireName } from './tool-names';

// How a user's stored MCP server is shown: its DTO (no secret), and before a stdio server has run,
// the one tool the catalog offers for it.

/** The tool part of the placeholder a stdio server offers before it has run (`startTool`). */
export const START_TOOL = 'skald_start';

/**
 * What the catalog offers for a stdio server that has never run: one tool whose call (approved like
 * any MCP tool) starts it and loads its tools.
 */
export function startTool(s: Pick<StoredMcpServer, 'name'>): McpToolDef {
  return {
    name: mcpWireName(s.name, START_TOOL),
    server: s.name,
    description:
      `Starts the MCP server "${s.name}" (its configured command, in your sandbox) and loads its tools, ` +
      'which can be called from the next step. Call it before using the server.',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    read_only: false,
    idempotent: true,
  };
}

/** A stored server as its owner sees it: its config without the sealed values, only their keys. */
export function toDto(s: StoredMcpServer): McpServerDto {
  return {
    name: s.name,
    transport: s.transport,
    ...(s.command !== null ? { command: s.command, args: s.args, network: s.network } : {}),
    ...(s.url !== null ? { url: s.url } : {}),
    enabled: s.enabled,
    status: s.enabled ? s.status : 'disabled',
    ...(s.error ? { error: s.error } : {}),
    tools_count: s.toolsCount,
    ...(s.transport === 'stdio' ? { env_keys: s.envKeys } : { header_keys: s.headerKeys }),
  };
}
