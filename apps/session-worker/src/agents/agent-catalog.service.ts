import { Inject, Injectable } from '@nestjs/common';
import type { AgentCatalogPort, AgentDefinition, AgentSummary } from '@skald/agent-loop';
import {
  Actor,
  AgentDetail,
  AgentList,
  AgentMeta,
  AgentMetaPatch,
  compileToolFilter,
  describeZodError,
  PutAgentRequest,
  StoredAgentMeta,
} from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { Logger } from '@skald/service-kit';
import { z } from 'zod';
import { WORKER_CONFIG, WORKER_LOGGER, WorkerConfig } from '../config';
import { MemoryDocument, MemoryDocuments, NatsMemory } from '../loop-adapters/nats-memory';
import { allowedAgents, NO_GROUPS, type GroupPolicy } from '../groups/group-policy';
import { AgentFiles } from './agent-files';
import { renderAgentList, renderMcpList, resolveDirectives, staticPrompt } from './agent-prompt';
import { MCP_DIRECTORY, McpDirectory } from './mcp-directory';
import { UserAgentRow, UserAgentsRepository } from './user-agents.repository';

export const AGENT_FILES = Symbol('AGENT_FILES');

/** The workspace as the model sees it. */
export const WORKSPACE_ROOT = '/workspace';

/** A user's `user_agents` rows as read at `at` (ms), to be trusted for `freshMs`. */
export interface AgentsRead {
  rows: readonly UserAgentRow[];
  at: number;
  freshMs: number;
}

/** An agent as one user sees it: the built-in files with the user's override, or the user's own agent. */
interface EffectiveAgent {
  id: string;
  meta: AgentMeta;
  prompt: string;
  origin: 'builtin' | 'custom';
  overridden: boolean;
  updatedAt: string | null;
}

const notFound = (agentId: string, hint = ''): RemoteError =>
  new RemoteError({ code: 'not_found', message: `agent ${agentId} not found${hint}` });
const invalid = (field: string, message: string): RemoteError =>
  new RemoteError({ code: 'invalid_input', field, message: `${field}: ${message}` });

/**
 * The agents catalog: built-in agents from `agents/` (read once at start), each user's overrides
 * and own agents from `user_agents`. It is the loop's `AgentCatalogPort` (the static prompt is
 * assembled here: AGENT.md + inject_memory documents + MCP list, with `__KEY__` substitutions) and
 * serves `GET/PUT /api/agents/{id}`, `DELETE /api/agents/{id}/override`.
 */
@Injectable()
export class AgentCatalogService implements AgentCatalogPort {
  private readonly promptVars: Record<string, string>;

  constructor(
    @Inject(AGENT_FILES) private readonly files: AgentFiles,
    private readonly repo: UserAgentsRepository,
    private readonly bus: Bus,
    @Inject(MCP_DIRECTORY) private readonly mcp: McpDirectory,
    @Inject(WORKER_CONFIG) config: WorkerConfig,
    @Inject(WORKER_LOGGER) private readonly log: Logger,
  ) {
    this.promptVars = config.SKALD_PROMPT_VARS;
  }

  // ------------------------------------------------------------------ the loop's port

  /**
   * The port for one turn of `userId`: the agents' `inject_memory` documents come from the turn's
   * `memory` (which asks them with the turn's memory context, in one request); the user's rows
   * read with the turn's start (loop-adapters/session-store/turn-start.ts, one snapshot with the session), when given,
   * answer its reads for `freshMs` after `at` — as a read of `user_agents` at that moment would;
   * later reads, or another user's, go to the table. `log`: the turn's logger (its lines name the turn).
   */
  forTurn(
    userId: string,
    memory: MemoryDocuments,
    read: AgentsRead | null,
    log: Logger = this.log,
    groups: GroupPolicy = NO_GROUPS,
  ): AgentCatalogPort {
    const primed = (uid: string): readonly UserAgentRow[] | null =>
      read && uid === userId && Date.now() - read.at <= read.freshMs ? read.rows : null;
    return {
      getAgent: (agentId, uid) =>
        this.getAgent(agentId, uid, primed(uid), uid === userId ? memory : undefined, log, groups),
      listTaskAgents: async (uid) => allowedAgents(groups, await this.listTaskAgents(uid, primed(uid))),
    };
  }

  /**
   * `rows`: the user's rows already read (see `forTurn`); null reads them. `memory`: where the
   * `inject_memory` documents come from (by default, a request of their own). `log`: the caller's.
   * `groups`: the owner's group policy; the agents it lists to the model (`__AGENTS__`) are those it allows.
   */
  async getAgent(
    agentId: string,
    userId: string,
    rows: readonly UserAgentRow[] | null = null,
    memory: MemoryDocuments = new NatsMemory(this.bus, userId, 'user'),
    log: Logger = this.log,
    groups: GroupPolicy = NO_GROUPS,
  ): Promise<AgentDefinition | null> {
    const agent = rows
      ? this.merge(agentId, rows.find((r) => r.agentId === agentId) ?? null)
      : await this.effective(userId, agentId);
    if (!agent) return null;
    const [documents, mcpServers, taskAgents] = await Promise.all([
      this.readMemory(userId, agent.meta.inject_memory, memory, log),
      this.mcp.listServers(userId),
      this.listTaskAgents(userId, rows).then((all) => allowedAgents(groups, all)),
    ]);
    let prompt: string;
    try {
      prompt = staticPrompt({ agentMd: agent.prompt, fragments: this.files.fragments, memory: documents, mcpServers });
    } catch (e) {
      // Checked on every write; a fragment removed since is reported, not fatal.
      log.warn({ userId, agentId, err: String(e) }, 'agent prompt directive could not be resolved');
      prompt = agent.prompt;
    }
    return {
      id: agent.id,
      name: agent.meta.name,
      description: agent.meta.description,
      prompt,
      type: agent.meta.type,
      client: agent.meta.client,
      strength: agent.meta.strength,
      scope: agent.meta.scope,
      tools: compileToolFilter(agent.meta.tools),
      substitutions: {
        ...this.promptVars,
        AGENTS: renderAgentList(taskAgents.filter((a) => a.id !== agent.id)),
        MCP_SERVERS: renderMcpList(mcpServers),
        AGENT_ID: agent.id,
        AGENT_NAME: agent.meta.name,
        WORKSPACE: WORKSPACE_ROOT,
      },
      tailReminder: agent.meta.instructions,
    };
  }

  /** The display name of `agentId` for `userId` (its id when it no longer exists): one row read, no prompt built. */
  async agentName(agentId: string, userId: string): Promise<string> {
    return (await this.effective(userId, agentId))?.meta.name ?? agentId;
  }

  /** Whether `agentId` names an agent of `userId` (built in or the user's own): one row read, no prompt built. */
  async exists(agentId: string, userId: string): Promise<boolean> {
    return (await this.effective(userId, agentId)) !== null;
  }

  async listTaskAgents(userId: string, read: readonly UserAgentRow[] | null = null): Promise<AgentSummary[]> {
    const rows = read ?? (await this.repo.list({ userId }));
    const byId = new Map(rows.map((r) => [r.agentId, r]));
    const out: AgentSummary[] = [];
    for (const builtin of this.files.agents.values()) {
      const agent = this.merge(builtin.id, byId.get(builtin.id) ?? null);
      if (agent?.meta.type === 'task') out.push(summary(agent));
    }
    for (const row of rows) {
      if (this.files.agents.has(row.agentId)) continue;
      const agent = this.merge(row.agentId, row);
      if (agent?.meta.type === 'task') out.push(summary(agent));
    }
    return out;
  }

  // ------------------------------------------------------------------ REST (over NATS)

  /** `GET /api/agents`: the task agents the caller's groups allow (`groups`, the caller's policy). */
  async list(actor: Actor, groups: GroupPolicy): Promise<AgentList> {
    return {
      items: allowedAgents(groups, await this.listTaskAgents(actor.userId)).map((a) => ({
        id: a.id,
        name: a.name,
        description: a.description,
        strength: a.strength,
      })),
    };
  }

  async detail(actor: Actor, agentId: string): Promise<AgentDetail> {
    const agent = await this.effective(actor.userId, agentId);
    if (!agent) throw notFound(agentId);
    return toDetail(agent);
  }

  /**
   * The caller's override of a built-in agent (prompt and / or meta fields; the type of a built-in
   * agent cannot change), a change to the caller's own agent, or a new own agent (prompt and meta
   * with at least name and type; never a system agent).
   */
  async put(
    actor: Actor,
    agentId: string,
    body: { prompt?: string; meta?: Record<string, unknown> },
  ): Promise<AgentDetail> {
    const parsed = PutAgentRequest.safeParse(body);
    if (!parsed.success) throw invalidFrom(parsed.error);
    const { prompt } = parsed.data;
    const patch = stripUndefined(parsed.data.meta ?? {});
    if (prompt !== undefined) {
      try {
        resolveDirectives(prompt, this.files.fragments);
      } catch (e) {
        throw invalid('prompt', e instanceof Error ? e.message : String(e));
      }
    }
    const scope = { userId: actor.userId, agentId };
    const builtin = this.files.agents.get(agentId);
    const existing = await this.repo.find(scope);
    if (builtin) {
      if (patch.type !== undefined && patch.type !== builtin.meta.type) {
        throw invalid(
          'meta.type',
          `the type of the built-in agent ${agentId} is ${builtin.meta.type} and cannot change`,
        );
      }
      await this.repo.upsert(scope, prompt ?? existing?.prompt ?? null, { ...(existing?.meta ?? {}), ...patch });
    } else {
      if (!existing && (prompt === undefined || patch.name === undefined || patch.type === undefined)) {
        throw notFound(agentId, '; to create an agent of your own, send prompt and meta with at least name and type');
      }
      const meta = { ...(existing?.meta ?? {}), ...patch };
      if (meta.type === 'system') throw invalid('meta.type', 'system agents are built in; use chat or task');
      const full = StoredAgentMeta.safeParse(meta);
      if (!full.success) throw invalidFrom(full.error, 'meta');
      await this.repo.upsert(scope, prompt ?? existing?.prompt ?? null, full.data);
    }
    return this.detail(actor, agentId);
  }

  /** Removes the caller's override (a built-in agent is back to its files) or the caller's own agent. */
  async deleteOverride(actor: Actor, agentId: string): Promise<{ deleted: boolean }> {
    const scope = { userId: actor.userId, agentId };
    if (this.files.agents.has(agentId)) return { deleted: await this.repo.delete(scope) };
    if (await this.repo.delete(scope)) return { deleted: true };
    throw notFound(agentId);
  }

  // ------------------------------------------------------------------ helpers

  private async effective(userId: string, agentId: string): Promise<EffectiveAgent | null> {
    return this.merge(agentId, await this.repo.find({ userId, agentId }));
  }

  private merge(agentId: string, row: UserAgentRow | null): EffectiveAgent | null {
    const builtin = this.files.agents.get(agentId);
    if (builtin) {
      const meta = row ? StoredAgentMeta.safeParse({ ...builtin.meta, ...row.meta }) : null;
      return {
        id: agentId,
        meta: meta?.success ? meta.data : builtin.meta,
        prompt: row?.prompt ?? builtin.prompt,
        origin: 'builtin',
        overridden: row !== null,
        updatedAt: row?.updatedAt ?? null,
      };
    }
    if (!row) return null;
    const meta = StoredAgentMeta.safeParse(row.meta);
    if (!meta.success) return null;
    return {
      id: agentId,
      meta: meta.data,
      prompt: row.prompt ?? '',
      origin: 'custom',
      overridden: false,
      updatedAt: row.updatedAt,
    };
  }

  /** The `inject_memory` documents (from the tool runner, which owns them); unreadable → skipped. */
  private async readMemory(
    userId: string,
    paths: string[],
    memory: MemoryDocuments,
    log: Logger,
  ): Promise<MemoryDocument[]> {
    if (paths.length === 0) return [];
    try {
      return await memory.documents(paths);
    } catch (e) {
      log.warn({ userId, err: String(e) }, 'inject_memory documents could not be read; the prompt goes without them');
      return paths.map((path) => ({ path, content: null }));
    }
  }
}

function summary(agent: EffectiveAgent): AgentSummary {
  return { id: agent.id, name: agent.meta.name, description: agent.meta.description, strength: agent.meta.strength };
}

function toDetail(agent: EffectiveAgent): AgentDetail {
  const m = agent.meta;
  return {
    id: agent.id,
    name: m.name,
    description: m.description,
    type: m.type,
    client: m.client,
    scope: m.scope,
    strength: m.strength,
    inject_memory: m.inject_memory,
    instructions: m.instructions,
    tools: m.tools,
    prompt: agent.prompt,
    origin: agent.origin,
    overridden: agent.overridden,
    updated_at: agent.updatedAt,
  };
}

function stripUndefined(o: Record<string, unknown>): Record<string, unknown> & Partial<z.infer<typeof AgentMetaPatch>> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

function invalidFrom(error: z.ZodError, prefix?: string): RemoteError {
  const d = describeZodError(error);
  const field = prefix ? [prefix, d.field].filter(Boolean).join('.') : d.field;
  return new RemoteError({
    code: 'invalid_input',
    message: prefix && d.field ? `${prefix}.${d.message}` : d.message,
    ...(field ? { field } : {}),
  });
}
