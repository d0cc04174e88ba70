import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  Actor,
  MCP_TRANSPORT_FIELDS,
  MCP_TRANSPORT_NOUN,
  MCP_TRANSPORTS,
  mcpServerConfig,
  McpServerDto,
  McpServerInput,
  McpServerPatch,
  McpToolDef,
  topicOf,
  unknownTransport,
} from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { RemoteError } from '@skald/messaging/bus-errors';
import { AddressPolicy, BlockedAddressError, SecretBox, type Logger } from '@skald/service-kit';
import { LOGGER, TOOL_RUNNER_CONFIG, ToolRunnerConfig } from '../config';
import { ToolCancelled, ToolContext, ToolOutput } from '../exec/tool-context';
import { ToolError } from '../tool-error';
import { McpConnection, McpServerTarget } from './mcp-connections';
import { McpLauncher } from './mcp-launcher';
import { resultText } from './mcp-result';
import { START_TOOL, startTool, toDto } from './mcp-server-view';
import { startsOnlyByCall, storedConfig } from './mcp-transports';
import { McpServersRepository, StoredMcpServer } from './mcp-servers.repository';
import { PerUserCache } from './per-user.cache';
import { mcpWireName } from './tool-names';

interface Secrets {
  env: Record<string, string>;
  headers: Record<string, string>;
}

/**
 * Each user's MCP servers (configs in Postgres, credentials sealed) and this runner's connections
 * to them, opened on first use and shared by that user's sessions, closed when idle, when the
 * server is removed (on every replica, by `mcp.servers.changed.<user>`) or when the server exits.
 * Every replica may serve any call: a connection is opened where the call lands.
 *
 * A stdio server runs the tenant's command, so it is started only by a tool call — which passed the
 * approval gate (MCP tools ask a human by default) — never by registering it nor by the catalog:
 * the catalog offers the tool list last read from it (`mcp_servers.tools`), or before its first run
 * one placeholder tool, `mcp__<server>__skald_start`, whose approved call starts it.
 */
@Injectable()
export class McpService implements OnModuleInit, OnApplicationShutdown {
  private readonly live = new Map<string, Promise<McpConnection>>();
  private readonly secretBox: SecretBox | null;
  private readonly policy: AddressPolicy;
  /** Each user's list as `mcp.servers.list` answers it (every turn asks it for the prompt). */
  private readonly lists: PerUserCache<McpServerDto[]>;
  private unwatchGaps?: () => void;
  private sweep?: NodeJS.Timeout;

  constructor(
    private readonly repo: McpServersRepository,
    private readonly launcher: McpLauncher,
    private readonly bus: Bus,
    @Inject(TOOL_RUNNER_CONFIG) private readonly config: ToolRunnerConfig,
    @Inject(LOGGER) private readonly log: Logger,
  ) {
    this.secretBox = SecretBox.fromConfig(config.SKALD_SECRETS_KEY);
    this.policy = new AddressPolicy(config.SKALD_MCP_ALLOW_HOSTS);
    this.lists = new PerUserCache({
      maxUsers: config.SKALD_MCP_LIST_CACHE_USERS,
      maxAgeMs: config.SKALD_MCP_LIST_CACHE_SECS * 1000,
    });
  }

  onModuleInit(): void {
    this.bus.subscribe('mcpServersChanged', (m) => {
      this.lists.invalidate(m.user_id);
      return m.reconfigured ? this.drop(m.user_id, m.name) : this.changedElsewhere(m.user_id, m.name);
    });
    // A doorbell rung while this replica was deaf is lost: forget every list.
    this.unwatchGaps = this.bus.onConnectionGap(() => this.lists.clear());
    const idleMs = this.config.SKALD_MCP_IDLE_SECS * 1000;
    const lifetimeMs = this.config.SKALD_MCP_LIFETIME_SECS * 1000;
    this.sweep = setInterval(
      () => void this.closeIdle(idleMs, lifetimeMs),
      Math.max(1000, Math.min(60_000, idleMs / 2, lifetimeMs / 2)),
    );
    this.sweep.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.sweep) clearInterval(this.sweep);
    this.unwatchGaps?.();
    const all = [...this.live.values()];
    this.live.clear();
    await Promise.allSettled(all.map(async (p) => (await p).close()));
  }

  /** The user's servers, from memory while no write, doorbell, connection gap or age bound has dropped them. */
  list(actor: Actor): Promise<McpServerDto[]> {
    return this.lists.get(actor.userId, async () => (await this.repo.list(actor.userId)).map(toDto));
  }

  async create(actor: Actor, input: McpServerInput): Promise<McpServerDto> {
    const hasSecrets = Object.keys(input.env ?? {}).length + Object.keys(input.headers ?? {}).length > 0;
    if (hasSecrets && !this.secretBox)
      throw invalid(
        input.env ? 'env' : 'headers',
        'credentials cannot be stored: the operator has not configured SKALD_SECRETS_KEY',
      );
    if (input.url) {
      try {
        await this.policy.checkUrl(new URL(input.url));
      } catch (e) {
        if (e instanceof BlockedAddressError) throw invalid('url', e.message);
        throw invalid('url', `cannot resolve ${new URL(input.url).hostname}: ${errorText(e)}`);
      }
    }
    if ((await this.repo.count(actor.userId)) >= this.config.SKALD_MCP_MAX_SERVERS)
      throw new RemoteError({
        code: 'conflict',
        message: `at most ${this.config.SKALD_MCP_MAX_SERVERS} MCP servers per user`,
      });
    const secrets: Secrets = { env: input.env ?? {}, headers: input.headers ?? {} };
    const stored = await this.repo.create({
      userId: actor.userId,
      name: input.name,
      ...storedConfig(mcpServerConfig(input)),
      secrets: hasSecrets ? this.secretBox!.seal(JSON.stringify(secrets), actor.userId) : null,
    });
    if (!stored)
      throw new RemoteError({ code: 'conflict', message: `an MCP server named ${input.name} exists`, field: 'name' });
    this.changed(actor.userId, input.name);
    // A server that may start before a call is connected now so that the list shows ready or the
    // error soon (a failure is recorded, not thrown).
    if (!startsOnlyByCall(stored.transport)) void this.connection(stored).catch(() => undefined);
    return toDto(stored);
  }

  /**
   * `PATCH /api/mcp/servers/{name}`: changes one of the caller's servers. A field of the other
   * transport is refused, naming it; credentials are checked as on creation. Disabling it, or
   * changing what runs, closes every replica's connection (a stdio server's process is stopped) and
   * the next use starts it again as configured; enabling an HTTP server connects it as on creation.
   */
  async update(actor: Actor, name: string, patch: McpServerPatch): Promise<McpServerDto> {
    const current = await this.repo.find(actor.userId, name);
    if (!current) throw new RemoteError({ code: 'not_found', message: `no MCP server named ${name}` });
    for (const other of MCP_TRANSPORTS.filter((t) => t !== current.transport))
      for (const f of MCP_TRANSPORT_FIELDS[other])
        if (patch[f] !== undefined) throw invalid(f, `only ${MCP_TRANSPORT_NOUN[other]} server has this field`);
    if (patch.url !== undefined) {
      try {
        await this.policy.checkUrl(new URL(patch.url));
      } catch (e) {
        if (e instanceof BlockedAddressError) throw invalid('url', e.message);
        throw invalid('url', `cannot resolve ${new URL(patch.url).hostname}: ${errorText(e)}`);
      }
    }
    let secrets: string | null | undefined;
    let envKeys: string[] | undefined;
    let headerKeys: string[] | undefined;
    if (patch.env !== undefined || patch.headers !== undefined) {
      const kept = this.secrets(current);
      const next: Secrets = { env: patch.env ?? kept.env, headers: patch.headers ?? kept.headers };
      const any = Object.keys(next.env).length + Object.keys(next.headers).length > 0;
      if (any && !this.secretBox)
        throw invalid(
          patch.env !== undefined ? 'env' : 'headers',
          'credentials cannot be stored: the operator has not configured SKALD_SECRETS_KEY',
        );
      secrets = any ? this.secretBox!.seal(JSON.stringify(next), actor.userId) : null;
      envKeys = Object.keys(next.env).sort();
      headerKeys = Object.keys(next.headers).sort();
    }
    const reconfigured = (['command', 'args', 'env', 'network', 'url', 'headers'] as const).some(
      (f) => patch[f] !== undefined,
    );
    const updated = await this.repo.update(
      actor.userId,
      name,
      {
        enabled: patch.enabled,
        command: patch.command,
        args: patch.args,
        url: patch.url,
        network: patch.network,
        envKeys,
        headerKeys,
        secrets,
      },
      reconfigured,
    );
    if (!updated) throw new RemoteError({ code: 'not_found', message: `no MCP server named ${name}` });
    const stops = reconfigured || (patch.enabled === false && current.enabled);
    this.changed(actor.userId, name, stops);
    if (stops) await this.drop(actor.userId, name);
    if (updated.enabled && !startsOnlyByCall(updated.transport) && (reconfigured || !current.enabled))
      void this.connection(updated).catch(() => undefined);
    return toDto(updated);
  }

  async delete(actor: Actor, name: string): Promise<void> {
    if (!(await this.repo.delete(actor.userId, name)))
      throw new RemoteError({ code: 'not_found', message: `no MCP server named ${name}` });
    this.changed(actor.userId, name);
    await this.drop(actor.userId, name);
  }

  /** Groups `activate_tools` may grant (the user's enabled servers) and the tools of the granted ones. */
  async catalog(actor: Actor, granted: readonly string[]): Promise<{ groups: string[]; tools: McpToolDef[] }> {
    const servers = (await this.repo.list(actor.userId)).filter((s) => s.enabled);
    const wanted = servers.filter((s) => granted.includes(s.name));
    const lists = await Promise.all(
      wanted.map(async (s) => {
        // Never started here for the catalog: its last known tools, or the placeholder that starts it.
        if (startsOnlyByCall(s.transport) && !this.running(s)) return s.tools ?? [startTool(s)];
        try {
          return (await (await this.connection(s)).list()).map((t) => t.def);
        } catch {
          return []; // recorded as the server's status; the model simply does not see its tools
        }
      }),
    );
    return { groups: servers.map((s) => s.name), tools: lists.flat() };
  }

  /** `mcp__<server>__<tool>`: one call, aborted by the call's signal (`/stop`). */
  async call(ctx: ToolContext, wireName: string, args: Record<string, unknown>): Promise<ToolOutput> {
    const servers = await this.repo.list(ctx.userId);
    const server = servers.find((s) => wireName.startsWith(`mcp__${s.name}__`));
    if (!server || !server.enabled)
      throw new ToolError('not_found', `${wireName}: no enabled MCP server of yours provides this tool`);
    const wasRunning = this.running(server);
    let conn: McpConnection;
    try {
      conn = await this.connection(server, ctx.log);
    } catch (e) {
      throw new ToolError('unavailable', `MCP server ${server.name} is not available: ${errorText(e)}`);
    }
    const tool = await conn.find(wireName);
    // The placeholder (unless the server has a tool of that very name and was already running).
    if (wireName === mcpWireName(server.name, START_TOOL) && (!wasRunning || !tool)) {
      const tools = await conn.list();
      return {
        result:
          `MCP server ${server.name} is running with ${tools.length} tool${tools.length === 1 ? '' : 's'}` +
          `${tools.length > 0 ? `: ${tools.map((t) => t.def.name).join(', ')}` : ''}. They can be called from the next step.`,
      };
    }
    if (!tool) throw new ToolError('not_found', `MCP server ${server.name} has no tool ${wireName} (any more)`);
    if (ctx.signal.aborted) throw new ToolCancelled();
    let result: CallToolResult;
    try {
      result = await conn.call(tool.tool, args, ctx.signal, this.config.SKALD_MCP_CALL_TIMEOUT_SECS * 1000);
    } catch (e) {
      if (ctx.signal.aborted) throw new ToolCancelled();
      throw new ToolError('io', `${wireName} failed: ${conn.describe(e)}`);
    }
    const text = resultText(result);
    if (result.isError) throw new ToolError('io', `${wireName} returned an error: ${text}`);
    return { result: text };
  }

  /** Read-only or idempotent MCP tools may run again after a crash; any other is marked interrupted. */
  restartHint(userId: string, wireName: string): 'reExecute' | 'markInterrupted' {
    for (const [key, p] of this.live) {
      if (!key.startsWith(`${userId}/`)) continue;
      const tool = settled.get(p)?.cached(wireName);
      if (tool) return tool.def.read_only || tool.def.idempotent ? 'reExecute' : 'markInterrupted';
    }
    return 'markInterrupted';
  }

  /** Whether this replica has (or is opening) a connection to exactly this stored server. */
  private running(s: StoredMcpServer): boolean {
    const p = this.live.get(`${s.userId}/${s.name}`);
    if (!p || openingIds.get(p) !== s.id) return false;
    return !settled.get(p)?.closed;
  }

  /** `log`: the logger of the call that needs the connection (its lines name the call), if any. */
  private connection(s: StoredMcpServer, log: Logger = this.log): Promise<McpConnection> {
    const key = `${s.userId}/${s.name}`;
    const existing = this.live.get(key);
    if (existing) {
      const conn = settled.get(existing);
      // A server re-created under the same name is another server.
      if (!conn || (!conn.closed && conn.target.id === s.id)) return existing;
      this.live.delete(key);
      void conn.close();
    }
    const opening = this.open(s, log).then(
      (conn) => {
        settled.set(opening, conn);
        return conn;
      },
      (e: unknown) => {
        if (this.live.get(key) === opening) this.live.delete(key);
        throw e;
      },
    );
    this.live.set(key, opening);
    openingIds.set(opening, s.id);
    return opening;
  }

  private async open(s: StoredMcpServer, log: Logger): Promise<McpConnection> {
    const ids = { userId: s.userId, server: s.name, transport: s.transport };
    await this.repo.markStarting(s.id).catch(() => undefined);
    this.changed(s.userId, s.name);
    try {
      const conn = await McpConnection.open(this.target(s), {
        launcher: this.launcher,
        policy: this.policy,
        timeoutMs: this.config.SKALD_MCP_CONNECT_TIMEOUT_SECS * 1000,
        bounds: {
          maxMessageBytes: this.config.SKALD_MCP_MAX_MESSAGE_BYTES,
          maxToolPages: this.config.SKALD_MCP_MAX_TOOL_PAGES,
          maxTools: this.config.SKALD_MCP_MAX_TOOLS,
          maxSchemaBytes: this.config.SKALD_MCP_MAX_SCHEMA_BYTES,
        },
        onClosed: (c) => {
          const key = `${c.target.userId}/${c.target.name}`;
          const p = this.live.get(key);
          if (p && settled.get(p) === c) this.live.delete(key);
        },
      });
      const tools = (await conn.list()).map((t) => t.def);
      const count = tools.length;
      await this.repo.setStatus(s.id, 'ready', null, count, tools).catch(() => undefined);
      this.changed(s.userId, s.name); // the list shows status and tool count
      log.info({ ...ids, tools: count }, 'MCP server connected');
      return conn;
    } catch (e) {
      const message = errorText(e);
      await this.repo.setStatus(s.id, 'error', message, 0).catch(() => undefined);
      this.changed(s.userId, s.name);
      log.warn({ ...ids, err: message }, 'MCP server failed to connect');
      throw e;
    }
  }

  /** A stored server's credentials, opened. */
  private secrets(s: StoredMcpServer): Secrets {
    if (!s.secrets) return { env: {}, headers: {} };
    if (!this.secretBox) throw new Error('its credentials cannot be opened: SKALD_SECRETS_KEY is not configured');
    try {
      return JSON.parse(this.secretBox.open(s.secrets, s.userId)) as Secrets;
    } catch {
      throw new Error('its credentials cannot be opened with the configured SKALD_SECRETS_KEY');
    }
  }

  private target(s: StoredMcpServer): McpServerTarget {
    const secrets = this.secrets(s);
    const ids = { id: s.id, userId: s.userId, name: s.name };
    switch (s.transport) {
      case 'stdio':
        return {
          ...ids,
          config: { transport: 'stdio', command: s.command, args: s.args, network: s.network, env: secrets.env },
        };
      case 'http':
        return { ...ids, config: { transport: 'http', url: s.url, headers: secrets.headers } };
      default:
        return unknownTransport(s);
    }
  }

  /**
   * A server was created, changed or removed (on any replica): a connection to what is no longer the
   * stored server (another id, or none) is closed; one to the stored server itself (this replica's
   * own creation) is kept.
   */
  private async changedElsewhere(userId: string, name: string): Promise<void> {
    const p = this.live.get(`${userId}/${name}`);
    if (!p) return;
    const stored = await this.repo.find(userId, name).catch(() => null);
    if (stored && openingIds.get(p) === stored.id) return;
    await this.drop(userId, name);
  }

  private async drop(userId: string, name: string): Promise<void> {
    const key = `${userId}/${name}`;
    const p = this.live.get(key);
    if (!p) return;
    this.live.delete(key);
    const conn = await p.catch(() => null);
    await conn?.close();
  }

  /** Closes connections unused for `idleMs` or open for `lifetimeMs` (the next use starts the server again). */
  private async closeIdle(idleMs: number, lifetimeMs: number): Promise<void> {
    const now = Date.now();
    for (const [key, p] of this.live) {
      const conn = settled.get(p);
      if (conn && (now - conn.lastUsed > idleMs || now - conn.openedAt > lifetimeMs)) {
        this.live.delete(key);
        await conn.close();
      }
    }
  }

  /**
   * After every write of `mcp_servers` (it is committed): drops the user's list here at once and, by
   * the doorbell, on every replica (this one included).
   */
  /** `reconfigured`: every other replica closes its connection to it too (`changedElsewhere`). */
  private changed(userId: string, name: string, reconfigured = false): void {
    this.lists.invalidate(userId);
    try {
      this.bus.publish(topicOf('mcpServersChanged', userId), {
        user_id: userId,
        name,
        ...(reconfigured ? { reconfigured: true } : {}),
      });
    } catch (e) {
      // the connection is closed (shutting down): other replicas see the change within the list's age bound
      this.log.warn({ userId, server: name, err: errorText(e) }, 'MCP change not announced');
    }
  }
}

/** Connections by their opening promise, once open (so that sync code can read them). */
const settled = new WeakMap<Promise<McpConnection>, McpConnection>();
/** The stored server id each connection was opened for. */
const openingIds = new WeakMap<Promise<McpConnection>, string>();

function invalid(field: string, message: string): RemoteError {
  return new RemoteError({ code: 'invalid_input', message, field });
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
