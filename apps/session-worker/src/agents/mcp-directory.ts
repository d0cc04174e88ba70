import { type McpServerDto, unknownTransport } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import type { McpServerInfo } from './agent-prompt';

/**
 * The MCP servers an agent may activate, for the prompt's MCP list.
 */
export interface McpDirectory {
  listServers(userId: string): Promise<McpServerInfo[]>;
}

export const MCP_DIRECTORY = Symbol('MCP_DIRECTORY');

/** The user's enabled MCP servers, as the tool runner keeps them (`mcp.servers.list`). */
export class NatsMcpDirectory implements McpDirectory {
  constructor(private readonly bus: Bus) {}

  async listServers(userId: string): Promise<McpServerInfo[]> {
    try {
      const r = await this.bus.call('mcp.servers.list', { actor: { userId, role: 'user' } });
      return r.items
        .filter((s) => s.enabled)
        .map((s) => ({
          name: s.name,
          description: describeServer(s),
          toolsCount: s.tools_count,
        }));
    } catch {
      return []; // the tool runner is unreachable: the prompt lists none, activate_tools still asks it
    }
  }
}

/** What the prompt says a server is: the command it runs, or where it is. */
function describeServer(s: McpServerDto): string {
  switch (s.transport) {
    case 'stdio':
      return `stdio: ${s.command}`;
    case 'http':
      return `HTTP: ${s.url}`;
    default:
      return unknownTransport(s);
  }
}
