import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolResult, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { McpToolDef } from '@skald/contracts';
import { AddressPolicy } from './address-guard';
import { McpLauncher } from './mcp-launcher';
import { mcpWireName } from './tool-names';

/** A configured server with its credentials opened: what a connection needs. */
export interface McpServerTarget {
  id: string;
  userId: string;
  name: string;
  transport: 'stdio' | 'http';
  command: string | null;
  args: string[];
  url: string | null;
  network: boolean;
  env: Record<string, string>;
  headers: Record<string, string>;
}

export interface McpTool {
  /** The MCP server's own name for it. */
  tool: string;
  def: McpToolDef;
}

const STDERR_TAIL = 2048;

/**
 * One live MCP session of one user's server on this runner: the SDK client, the tool list (kept
 * until the server says `tools/list_changed`), and what a failure message may not contain.
 */
export class McpConnection {
  lastUsed = Date.now();
  closed = false;
  private tools = new Map<string, McpTool>();
  private stderrTail = '';
  private refreshing: Promise<void> | null = null;

  private constructor(
    readonly target: McpServerTarget,
    private readonly client: Client,
    private readonly onClosed: (c: McpConnection) => void,
  ) {}

  static async open(
    target: McpServerTarget,
    deps: { launcher: McpLauncher; policy: AddressPolicy; timeoutMs: number; onClosed: (c: McpConnection) => void },
  ): Promise<McpConnection> {
    const client = new Client({ name: 'skald', version: '0.1.0' }, { capabilities: {} });
    const conn = new McpConnection(target, client, deps.onClosed);
    let transport: Transport;
    if (target.transport === 'stdio') {
      const launch = await deps.launcher.stdio({
        userId: target.userId,
        command: target.command ?? '',
        args: target.args,
        env: target.env,
        network: target.network,
      });
      const stdio = new StdioClientTransport({ ...launch, stderr: 'pipe' });
      stdio.stderr?.on('data', (chunk: Buffer) => {
        conn.stderrTail = (conn.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL);
      });
      transport = stdio;
    } else {
      const url = new URL(target.url ?? '');
      await deps.policy.checkUrl(url);
      transport = new StreamableHTTPClientTransport(url, {
        fetch: deps.policy.guardedFetch(),
        requestInit: { headers: target.headers },
      });
    }
    client.onclose = () => conn.markClosed();
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      conn.refreshing = conn.loadTools().catch(() => undefined);
    });
    try {
      await client.connect(transport, { timeout: deps.timeoutMs });
      await conn.loadTools(deps.timeoutMs);
    } catch (e) {
      await client.close().catch(() => undefined);
      throw new Error(conn.describe(e));
    }
    return conn;
  }

  /** The tools as the model is offered them (after a pending `list_changed` refresh). */
  async list(): Promise<McpTool[]> {
    await this.refreshing;
    return [...this.tools.values()];
  }

  /** The tool behind a wire name, from the current list. */
  async find(wireName: string): Promise<McpTool | undefined> {
    await this.refreshing;
    return this.tools.get(wireName);
  }

  /** Known without waiting: the restart hint of a call found started after a crash. */
  cached(wireName: string): McpTool | undefined {
    return this.tools.get(wireName);
  }

  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal, timeoutMs: number) {
    this.lastUsed = Date.now();
    const result = (await this.client.callTool({ name: tool, arguments: args }, undefined, {
      signal,
      timeout: timeoutMs,
      resetTimeoutOnProgress: true,
    })) as CallToolResult;
    this.lastUsed = Date.now();
    return result;
  }

  async close(): Promise<void> {
    this.markClosed();
    await this.client.close().catch(() => undefined);
  }

  /** A failure as the user may read it: stderr's tail with every credential value masked. */
  describe(e: unknown): string {
    let text = e instanceof Error ? e.message : String(e);
    const tail = this.stderrTail.trim();
    if (tail) text += ` (stderr: ${tail.slice(-500)})`;
    for (const secret of [...Object.values(this.target.env), ...Object.values(this.target.headers)])
      if (secret.length >= 4) text = text.split(secret).join('***');
    return text;
  }

  private markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClosed(this);
  }

  private async loadTools(timeoutMs?: number): Promise<void> {
    const next = new Map<string, McpTool>();
    let cursor: string | undefined;
    do {
      const page = await this.client.listTools(
        cursor ? { cursor } : undefined,
        timeoutMs ? { timeout: timeoutMs } : {},
      );
      for (const t of page.tools) {
        const name = mcpWireName(this.target.name, t.name);
        next.set(name, {
          tool: t.name,
          def: {
            name,
            server: this.target.name,
            description: (t.description ?? t.title ?? t.name).slice(0, 2048),
            parameters: t.inputSchema,
            read_only: t.annotations?.readOnlyHint === true,
            idempotent: t.annotations?.idempotentHint === true,
          },
        });
      }
      cursor = page.nextCursor;
    } while (cursor);
    this.tools = next;
  }
}
