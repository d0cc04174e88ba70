// A stdio MCP server for tests: `grow` registers one more tool, which makes the SDK send
// `notifications/tools/list_changed` to the client; `whoami` answers the sandbox's view of itself.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { z } from 'zod';

const server = new McpServer({ name: 'list-changed-fixture', version: '1.0.0' });
let added = 0;
server.registerTool('grow', { description: 'Adds a tool named added_<n>', inputSchema: {} }, async () => {
  added += 1;
  const n = added;
  server.registerTool(
    `added_${n}`,
    { description: `Tool number ${n} added at run time`, inputSchema: { x: z.string() } },
    async ({ x }) => ({
      content: [{ type: 'text', text: `added_${n} got ${x}` }],
    }),
  );
  return { content: [{ type: 'text', text: `now ${added} added` }] };
});
server.registerTool(
  'whoami',
  { description: 'The sandbox as the server sees it', inputSchema: {}, annotations: { readOnlyHint: true } },
  async () => {
    let hosts = '';
    try {
      hosts = readFileSync('/etc/hostname', 'utf8');
    } catch {
      hosts = '(unreadable)';
    }
    return {
      content: [
        {
          type: 'text',
          text: JSON.stringify({ hostname: hostname(), uid: process.getuid(), cwd: process.cwd(), hosts }),
        },
      ],
    };
  },
);
await server.connect(new StdioServerTransport());
