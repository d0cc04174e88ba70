/**
 * AgentCatalogService's REST operations over an in-memory user_agents table: the task agents a
 * user sees (built-in and own, overrides applied), an override of a built-in agent that cannot
 * change its type, an own agent that needs a prompt, a name and a type and is never a system agent,
 * deleting an override (the built-in one is back) or an own agent, and each user seeing only their
 * own rows. (The loop's port, `forTurn`: agent-catalog.for-turn.spec.ts.)
 */
import { Actor, AgentMeta } from '@skald/contracts';
import type { Logger } from '@skald/service-kit';
import { fake, newTestService } from '@skald/testing/unit';
import { WORKER_CONFIG, WORKER_LOGGER, WorkerConfig } from '../config';
import { NO_GROUPS, resolveGroupPolicy } from '../groups/group-policy';
import { AGENT_FILES, AgentCatalogService } from './agent-catalog.service';
import type { AgentFiles } from './agent-files';
import { MCP_DIRECTORY } from './mcp-directory';
import { UserAgentRow, UserAgentsRepository } from './user-agents.repository';

const alice = { userId: 'alice', role: 'user' } as Actor;
const bob = { userId: 'bob', role: 'user' } as Actor;

const files: AgentFiles = {
  dir: '/agents',
  agents: new Map([
    ['main', { id: 'main', meta: AgentMeta.parse({ name: 'Main', type: 'chat' }), prompt: 'You are main.' }],
    [
      'coder',
      {
        id: 'coder',
        meta: AgentMeta.parse({ name: 'Coder', type: 'task', description: 'writes code' }),
        prompt: 'You code.',
      },
    ],
  ]),
  fragments: new Map(),
};

/** user_agents in memory, keyed by user and agent. */
function table(): Partial<UserAgentsRepository> {
  const rows = new Map<string, UserAgentRow & { userId: string }>();
  const key = (s: { userId: string; agentId: string }) => `${s.userId}/${s.agentId}`;
  return {
    find: (s) => Promise.resolve(rows.get(key(s)) ?? null),
    list: ({ userId }) => Promise.resolve([...rows.values()].filter((r) => r.userId === userId)),
    upsert: (s, prompt, meta) => {
      const row = { userId: s.userId, agentId: s.agentId, prompt, meta, updatedAt: '2026-12-06T10:00:00.000Z' };
      rows.set(key(s), row);
      return Promise.resolve(row as never);
    },
    delete: (s) => Promise.resolve(rows.delete(key(s))),
  };
}

function setUp() {
  return newTestService(AgentCatalogService, [
    fake(AGENT_FILES, files),
    fake(UserAgentsRepository, table()),
    fake(MCP_DIRECTORY, { servers: () => [] }),
    fake(WORKER_CONFIG, { SKALD_PROMPT_VARS: {} } as Partial<WorkerConfig>),
    fake(WORKER_LOGGER, { warn: jest.fn(), info: jest.fn() } as unknown as Logger),
  ]).sut;
}

const ownAgent = { prompt: 'You review.', meta: { name: 'Reviewer', type: 'task', description: 'reviews' } };

describe('AgentCatalogService', () => {
  it("lists the built-in task agents, a user's own ones, and no chat agent", async () => {
    const catalog = setUp();
    expect((await catalog.list(alice, NO_GROUPS)).items.map((a) => a.id)).toEqual(['coder']);
    await catalog.put(alice, 'reviewer', ownAgent);
    expect(await catalog.list(alice, NO_GROUPS)).toEqual({
      items: [
        { id: 'coder', name: 'Coder', description: 'writes code', strength: null },
        { id: 'reviewer', name: 'Reviewer', description: 'reviews', strength: null },
      ],
    });
    expect((await catalog.list(bob, NO_GROUPS)).items.map((a) => a.id)).toEqual(['coder']);
  });

  it("lists only the agents the caller's groups allow (a group allowing all lists all)", async () => {
    const catalog = setUp();
    await catalog.put(alice, 'reviewer', ownAgent);
    const group = (allowed: string[] | null) =>
      resolveGroupPolicy([{ name: 'G', allowed_agents: allowed, allowed_llm_clients: null, security_groups: [] }]);
    expect((await catalog.list(alice, group(['main', 'reviewer']))).items.map((a) => a.id)).toEqual(['reviewer']);
    expect((await catalog.list(alice, group([]))).items).toEqual([]);
    expect((await catalog.list(alice, group(null))).items.map((a) => a.id)).toEqual(['coder', 'reviewer']);
  });

  it('overrides a built-in agent for one user, and deleting the override brings the files back', async () => {
    const catalog = setUp();
    const detail = await catalog.put(alice, 'coder', { prompt: 'You code in Rust.', meta: { name: 'Rustacean' } });
    expect(detail).toMatchObject({
      id: 'coder',
      name: 'Rustacean',
      type: 'task',
      prompt: 'You code in Rust.',
      origin: 'builtin',
      overridden: true,
      updated_at: '2026-12-06T10:00:00.000Z',
    });
    expect(await catalog.detail(bob, 'coder')).toMatchObject({ name: 'Coder', prompt: 'You code.', overridden: false });
    expect(await catalog.deleteOverride(alice, 'coder')).toEqual({ deleted: true });
    expect(await catalog.detail(alice, 'coder')).toMatchObject({ name: 'Coder', overridden: false, updated_at: null });
    expect(await catalog.deleteOverride(alice, 'coder')).toEqual({ deleted: false });
  });

  it('refuses to change the type of a built-in agent', async () => {
    await expect(setUp().put(alice, 'main', { meta: { type: 'task' } })).rejects.toMatchObject({
      body: { code: 'invalid_input', field: 'meta.type' },
    });
  });

  it('creates an own agent only with a prompt, a name and a type, and never a system agent', async () => {
    const catalog = setUp();
    await expect(catalog.put(alice, 'helper', { meta: { name: 'Helper', type: 'task' } })).rejects.toMatchObject({
      body: { code: 'not_found' },
    });
    await expect(
      catalog.put(alice, 'root', { prompt: 'x', meta: { name: 'Root', type: 'system' } }),
    ).rejects.toMatchObject({ body: { code: 'invalid_input', field: 'meta.type' } });
    expect(await catalog.put(alice, 'reviewer', ownAgent)).toMatchObject({
      id: 'reviewer',
      origin: 'custom',
      prompt: 'You review.',
    });
    expect(await catalog.exists('reviewer', 'alice')).toBe(true);
    expect(await catalog.exists('reviewer', 'bob')).toBe(false);
  });

  it("answers not_found for an agent that does not exist or is another user's", async () => {
    const catalog = setUp();
    await catalog.put(alice, 'reviewer', ownAgent);
    await expect(catalog.detail(bob, 'reviewer')).rejects.toMatchObject({ body: { code: 'not_found' } });
    await expect(catalog.deleteOverride(bob, 'reviewer')).rejects.toMatchObject({ body: { code: 'not_found' } });
    expect(await catalog.deleteOverride(alice, 'reviewer')).toEqual({ deleted: true });
    await expect(catalog.detail(alice, 'reviewer')).rejects.toMatchObject({ body: { code: 'not_found' } });
  });
});
