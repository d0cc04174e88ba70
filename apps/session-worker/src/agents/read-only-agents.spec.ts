import type { AgentDefinition } from '@skald/agent-loop';
import {
  AgentMeta,
  BUILTIN_TOOLS,
  compileToolFilter,
  defineTool,
  EVERYWHERE,
  LOOP_TOOLS,
  REGISTRY_TOOLS,
  toolGroups,
} from '@skald/contracts';
import type { Bus } from '@skald/messaging/bus-port';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { Logger } from '@skald/service-kit';
import { join } from 'node:path';
import { z } from 'zod';
import type { WorkerConfig } from '../config';
import { AgentCatalogService } from './agent-catalog.service';
import { type AgentFiles, loadAgentFiles } from './agent-files';
import type { UserAgentRow, UserAgentsRepository } from './user-agents.repository';

/** The built-in agents that must not change files, with their `meta.json` as shipped (read as the worker reads it). */
const shipped = loadAgentFiles(join(__dirname, '../../../../agents')).agents;
const metaOf = (id: string): AgentMeta => {
  const agent = shipped.get(id);
  if (!agent) throw new Error(`no built-in agent ${id}`);
  return agent.meta;
};
const READ_ONLY = { researcher: metaOf('researcher'), 'code-explorer': metaOf('code-explorer') };

/** A write tool as a newcomer would add it to the registry: nobody edits an agent's meta.json. */
const chmodFile = defineTool({
  name: 'chmod_file',
  description: 'Change the mode of a file.',
  args: z.object({ path: z.string(), mode: z.string() }),
  category: 'filesystem',
  access: 'write',
  restartHint: 'reExecute',
  offeredAt: EVERYWHERE,
  defaultRule: 'require',
});
const withChmod = toolGroups({ ...REGISTRY_TOOLS, builtin: [...BUILTIN_TOOLS, chmodFile] });

describe('the built-in read-only agents name a group, not a list', () => {
  it.each(Object.entries(READ_ONLY))('%s is denied a write tool added to the registry', (_id, meta) => {
    const filter = compileToolFilter(meta.tools, withChmod);
    expect(filter.allows('chmod_file')).toBe(false);
    const writesFiles = [...BUILTIN_TOOLS, chmodFile].filter((t) => t.writesFile).map((t) => t.name);
    expect(writesFiles.filter((n) => filter.allows(n))).toEqual([]);
    expect(filter.allows('read_file')).toBe(true);
  });

  it('the code explorer is offered only read-only tools: no command, no delegation, no MCP', () => {
    const filter = compileToolFilter(READ_ONLY['code-explorer'].tools);
    const writes = [...BUILTIN_TOOLS, ...LOOP_TOOLS].filter((t) => t.access === 'write').map((t) => t.name);
    expect(writes.filter((n) => filter.allows(n))).toEqual([]);
    expect(filter.allows('mcp__gh__issues')).toBe(false);
    expect(['list_files', 'grep_files', 'update_scratchpad', 'list_agents'].every((n) => filter.allows(n))).toBe(true);
  });

  it('the researcher keeps what its method uses: read-only commands and MCP tools', () => {
    const filter = compileToolFilter(READ_ONLY.researcher.tools);
    expect(['execute_cmd', 'mcp__gh__issues', 'memory_search', 'grep_files'].every((n) => filter.allows(n))).toBe(true);
    expect(filter.allows('delete_file')).toBe(false);
  });
});

describe('agent tool filters on write', () => {
  const files: AgentFiles = {
    dir: '/agents',
    agents: new Map([
      ['main', { id: 'main', meta: AgentMeta.parse({ name: 'Main', type: 'chat' }), prompt: 'You are main.' }],
      ['researcher', { id: 'researcher', meta: READ_ONLY.researcher, prompt: 'You research.' }],
    ]),
    fragments: new Map(),
  };
  const rows: UserAgentRow[] = [];
  const repo = {
    find: ({ agentId }: { agentId: string }) => Promise.resolve(rows.find((r) => r.agentId === agentId) ?? null),
    list: () => Promise.resolve(rows),
    upsert: (scope: { agentId: string }, prompt: string | null, meta: Record<string, unknown>) => {
      rows.push({ agentId: scope.agentId, prompt, meta, updatedAt: '2026-01-01T00:00:00.000Z' });
      return Promise.resolve();
    },
  } as unknown as UserAgentsRepository;
  const catalog = new AgentCatalogService(
    files,
    repo,
    { call: () => Promise.resolve({ documents: [] }) } as unknown as Bus,
    { listServers: () => Promise.resolve([]) },
    { SKALD_PROMPT_VARS: {} } as unknown as WorkerConfig,
    { warn: () => undefined } as unknown as Logger,
  );
  const actor = { userId: 'u1', username: 'u1', isAdmin: false } as never;

  it('an unknown group is refused naming the field and the accepted forms; nothing is stored', async () => {
    const put = catalog.put(actor, 'researcher', { meta: { tools: { allow: [], deny: ['@fs_writes'] } } });
    await expect(put).rejects.toBeInstanceOf(RemoteError);
    const body = await put.then(
      () => null,
      (e: RemoteError) => e.body,
    );
    expect(body).toMatchObject({ code: 'invalid_input', field: 'meta.tools.deny.0' });
    expect(body?.message).toContain('unknown tool group @fs_writes');
    expect(body?.message).toContain('or a group: @fs_read, @fs_write');
    expect(rows).toEqual([]);
  });

  it("a user's override with groups is compiled into the agent the loop gets", async () => {
    await catalog.put(actor, 'main', { meta: { tools: { allow: [], deny: ['@shell', 'mcp__*'] } } });
    const main = (await catalog.getAgent('main', 'u1', null, {
      documents: () => Promise.resolve([]),
    })) as AgentDefinition;
    expect(['execute_cmd', 'mcp__gh__issues'].map((n) => main.tools.allows(n))).toEqual([false, false]);
    expect(main.tools.allows('write_file')).toBe(true);
  });
});
