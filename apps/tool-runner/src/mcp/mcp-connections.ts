import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolResult, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { everyFieldApplied, McpServerConfig, McpToolDef, unknownTransport } from '@skald/contracts';
import { AddressPolicy } from '@skald/service-kit';
import { McpLauncher } from './mcp-launcher';
import { mcpWireName } from './tool-names';

/** A configured server with its credentials opened: what a connection needs. */
export interface McpServerTarget {
  id: string;
  userId: string;
  name: string;
  config: McpServerConfig;
}

/** The values of a target's credentials: a stdio server's environment, an http server's headers. */
function credentialValues(target: McpServerConfig): string[] {
  const kind = target.transport;
  switch (kind) {
    case 'stdio':
      return Object.values(target.env);
    case 'http':
      return Object.values(target.headers);
    default:
      return unknownTransport(kind);
  }
}

export interface McpTool {
  /** The MCP server's own name for it. */
  tool: string;
  def: McpToolDef;
}

const STDERR_TAIL = 2048;

/** What one connection may take from its server (see the `SKALD_MCP_MAX_*` settings). */
export interface McpBounds {
  maxMessageBytes: number;
  maxToolPages: number;
  maxTools: number;
  maxSchemaBytes: number;
}

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
  /** Set when the runner ended the connection (an oversized message): said in every later failure. */
  private failure: () => string | null = () => null;
  readonly openedAt = Date.now();

  private constructor(
    readonly target: McpServerTarget,
    private readonly client: Client,
    private readonly bounds: McpBounds,
    private readonly onClosed: (c: McpConnection) => void,
  ) {}

  static async open(
    target: McpServerTarget,
    deps: {
      launcher: McpLauncher;
      policy: AddressPolicy;
      timeoutMs: number;
      bounds: McpBounds;
      onClosed: (c: McpConnection) => void;
    },
  ): Promise<McpConnection> {
    const client = new Client({ name: 'skald', version: '0.1.0' }, { capabilities: {} });
    const conn = new McpConnection(target, client, deps.bounds, deps.onClosed);
    let transport: Transport;
    const config = target.config;
    switch (config.transport) {
      case 'stdio': {
        const { transport: _stdio, ...fields } = config;
        const stdio = await deps.launcher.stdio({ userId: target.userId, ...fields });
        stdio.stderr.on('data', (chunk: Buffer) => {
          conn.stderrTail = (conn.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL);
        });
        conn.failure = () => stdio.failure;
        transport = stdio;
        break;
      }
      case 'http': {
        const { transport: _http, url, headers, ...rest } = config;
        everyFieldApplied(rest);
        const endpoint = new URL(url);
        await deps.policy.checkUrl(endpoint);
        const limited = boundedFetch(deps.policy.guardedFetch(), deps.bounds.maxMessageBytes);
        conn.failure = () => limited.failure;
        transport = new StreamableHTTPClientTransport(endpoint, {
          fetch: limited.fetch,
          requestInit: { headers },
        });
        break;
      }
      default:
        return unknownTransport(config);
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
    let text = this.failure() ?? (e instanceof Error ? e.message : String(e));
    const tail = this.stderrTail.trim();
    if (tail) text += ` (stderr: ${tail.slice(-500)})`;
    for (const secret of credentialValues(this.target.config))
      if (secret.length >= 4) text = text.split(secret).join('***');
    return text;
  }

  private markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClosed(this);
  }

  /**
   * Reads the tool list: at most `maxToolPages` pages and `maxTools` tools (a server that pages on
   * past them, or repeats a cursor, gets the tools read so far); a tool whose input schema is over
   * `maxSchemaBytes` is left out.
   */
  private async loadTools(timeoutMs?: number): Promise<void> {
    const next = new Map<string, McpTool>();
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let pages = 0; pages < this.bounds.maxToolPages; pages++) {
      const page = await this.client.listTools(
        cursor ? { cursor } : undefined,
        timeoutMs ? { timeout: timeoutMs } : {},
      );
      for (const t of page.tools) {
        if (next.size >= this.bounds.maxTools) break;
        if (Buffer.byteLength(JSON.stringify(t.inputSchema)) > this.bounds.maxSchemaBytes) continue;
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
      if (!cursor || seen.has(cursor) || next.size >= this.bounds.maxTools) break;
      seen.add(cursor);
    }
    this.tools = next;
  }
}

/**
 * A fetch whose response bodies are read through a counter: past `maxBytes` the body errors (the
 * request fails with a clear reason) and the rest is never read, so no response is held whole
 * beyond the bound, JSON or an SSE stream alike.
 */
export function boundedFetch(
  inner: typeof fetch,
  maxBytes: number,
): { fetch: typeof fetch; readonly failure: string | null } {
  const state = { failure: null as string | null };
  const limited: typeof fetch = async (input, init) => {
    const res = await inner(input, init);
    if (!res.body) return res;
    let seen = 0;
    const counter = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > maxBytes) {
          state.failure = `the MCP server sent a response of more than ${maxBytes} bytes; it was cut off`;
          controller.error(new Error(state.failure));
          return;
        }
        controller.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(counter), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  };
  return {
    fetch: limited,
    get failure() {
      return state.failure;
    },
  };
}
