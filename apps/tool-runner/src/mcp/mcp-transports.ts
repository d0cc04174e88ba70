import { type McpServerConfig, type McpTransport, unknownTransport } from '@skald/contracts';
import type { StoredMcpConfig } from './mcp-servers.repository';

// What each transport means to the MCP service: when its server starts, and what of its config is
// stored. A new transport fails to compile here until it is decided.

/**
 * A stdio server runs the tenant's command, so only an approved call of one of its tools starts it
 * (never the catalog nor its configuration); an http server is connected when it is configured.
 */
export function startsOnlyByCall(transport: McpTransport): boolean {
  switch (transport) {
    case 'stdio':
      return true;
    case 'http':
      return false;
    default:
      return unknownTransport(transport);
  }
}

/** A configuration as stored: credentials sealed elsewhere, listed by key. */
export function storedConfig(c: McpServerConfig): StoredMcpConfig {
  switch (c.transport) {
    case 'stdio':
      return {
        transport: 'stdio',
        command: c.command,
        args: c.args,
        network: c.network,
        envKeys: Object.keys(c.env).sort(),
      };
    case 'http':
      return { transport: 'http', url: c.url, headerKeys: Object.keys(c.headers).sort() };
    default:
      return unknownTransport(c);
  }
}
