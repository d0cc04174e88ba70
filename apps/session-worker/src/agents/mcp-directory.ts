import type { McpServerInfo } from './agent-prompt';

/**
 * The MCP servers an agent may activate, for the prompt's MCP list. The MCP servers work (tool
 * runner) will implement it; until then nothing is configured.
 */
export interface McpDirectory {
  listServers(userId: string): Promise<McpServerInfo[]>;
}

export const MCP_DIRECTORY = Symbol('MCP_DIRECTORY');

export class NoMcpServers implements McpDirectory {
  listServers(): Promise<McpServerInfo[]> {
    return Promise.resolve([]);
  }
}
