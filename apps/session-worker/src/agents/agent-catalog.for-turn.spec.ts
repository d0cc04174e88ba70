import fc from 'fast-check';
import type { AgentDefinition } from '@skald/agent-loop';
import { AgentMeta, BUILTIN_TOOLS, LOOP_TOOLS } from '@skald/contracts';
import type { Bus } from '@skald/messaging/bus-port';
import type { Logger } from '@skald/service-kit';
import type { WorkerConfig } from '../config';
import { resolveGroupPolicy } from '../groups/group-policy';
import { AgentCatalogService } from './agent-catalog.service';
import type { AgentFiles } from './agent-files';
import type { MemoryDocuments } from '../loop-adapters/nats-memory';
import type { UserAgentRow, UserAgentsRepository } from './user-agents.repository';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const builtinMeta = (name: string, type: 'chat' | 'task'): AgentMeta => AgentMeta.parse({ name, type });

const files: AgentFiles = {
  dir: '/agents',
  agents: new Map([
    ['main', { id: 'main', meta: builtinMeta('Main', 'chat'), prompt: 'You are main. __AGENTS__' }],
    ['coder', { id: 'coder', meta: builtinMeta('Coder', 'task'), prompt: 'You code.' }],
  ]),
  fragments: new Map(),
};

const row = fc.record({
  agentId: fc.constantFrom('main', 'coder', 'mine', 'other'),
  prompt: fc.option(fc.string({ maxLength: 12 })),
  meta: fc.constantFrom<Record<string, unknown>>(
    {},
    { name: 'Mine', type: 'task', description: 'd' },
    { name: 'Chatty', type: 'chat' },
    { instructions: 'be brief' },
    { type: 'system' },
    { name: '' },
    { tools: { allow: ['@read_only'], deny: ['list_*'] } },
    // a stored entry that does not parse: it matches no tool
    { name: 'Old', type: 'task', tools: { allow: [], deny: ['list files'] } },
  ),
  updatedAt: fc.constant('2026-01-01T00:00:00.000Z'),
});

const noDocuments: MemoryDocuments = {
  documents: (paths) => Promise.resolve(paths.map((path) => ({ path, content: null }))),
};

/** An agent definition with its compiled tool filter replaced by what it allows of the registry's tools. */
const comparable = (a: AgentDefinition | null) =>
  a && { ...a, tools: [...BUILTIN_TOOLS, ...LOOP_TOOLS].map((t) => t.name).filter((n) => a.tools.allows(n)) };

const byAgentId = (rows: UserAgentRow[]) => [...rows].sort((a, b) => (a.agentId < b.agentId ? -1 : 1));

/** The catalog over a repository holding `rows` for user `u1`, counting its reads. */
function catalogOver(rows: UserAgentRow[]) {
  const reads = { n: 0 };
  const repo = {
    find: ({ userId, agentId }: { userId: string; agentId: string }) => {
      reads.n++;
      return Promise.resolve(userId === 'u1' ? (rows.find((r) => r.agentId === agentId) ?? null) : null);
    },
    list: ({ userId }: { userId: string }) => {
      reads.n++;
      return Promise.resolve(userId === 'u1' ? byAgentId(rows) : []);
    },
  } as unknown as UserAgentsRepository;
  const bus = { call: () => Promise.resolve({ documents: [] }) } as unknown as Bus;
  const log = { warn: () => undefined } as unknown as Logger;
  const catalog = new AgentCatalogService(
    files,
    repo,
    bus,
    { listServers: () => Promise.resolve([]) },
    { SKALD_PROMPT_VARS: {} } as unknown as WorkerConfig,
    log,
  );
  return { catalog, reads };
}

/**
 * The turn's catalog (`forTurn`: the user's rows read with the turn's start) answers exactly what
 * the catalog answers from the table, for every agent id, without reading the table while the rows
 * are fresh; another user's reads and reads after `freshMs` go to the table.
 */
describe('AgentCatalogService.forTurn', () => {
  it('answers what the table-backed catalog answers, without reading the table', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(row, { selector: (r) => r.agentId, maxLength: 4 }), async (rows) => {
        const { catalog, reads } = catalogOver(rows);
        // In agent_id order, as the turn's start read returns them (and the repository's list).
        const turn = catalog.forTurn('u1', noDocuments, { rows: byAgentId(rows), at: Date.now(), freshMs: 60_000 });
        const expected = (
          await Promise.all(['main', 'coder', 'mine', 'other'].map((id) => catalog.getAgent(id, 'u1')))
        ).map(comparable);
        const expectedList = await catalog.listTaskAgents('u1');
        reads.n = 0;
        expect(
          (await Promise.all(['main', 'coder', 'mine', 'other'].map((id) => turn.getAgent(id, 'u1')))).map(comparable),
        ).toEqual(expected);
        expect(await turn.listTaskAgents('u1')).toEqual(expectedList);
        expect(reads.n).toBe(0);
        // Another user's reads are not answered from u1's rows.
        expect(comparable(await turn.getAgent('mine', 'u2'))).toEqual(comparable(await catalog.getAgent('mine', 'u2')));
        expect(reads.n).toBeGreaterThan(0);
      }),
      { seed: SEED, numRuns: 60 },
    );
  });

  it("lists to the model (list_agents, __AGENTS__) only the agents the owner's groups allow", async () => {
    const { catalog } = catalogOver([
      { agentId: 'mine', prompt: 'p', meta: { name: 'Mine', type: 'task' }, updatedAt: '2026-01-01T00:00:00.000Z' },
    ]);
    const groups = resolveGroupPolicy([
      { name: 'Interns', allowed_agents: ['main', 'mine'], allowed_llm_clients: null, security_groups: [] },
    ]);
    const turn = catalog.forTurn('u1', noDocuments, null, undefined, groups);
    expect((await turn.listTaskAgents('u1')).map((a) => a.id)).toEqual(['mine']);
    const main = await turn.getAgent('main', 'u1');
    expect(main?.substitutions.AGENTS).toContain('mine');
    expect(main?.substitutions.AGENTS).not.toContain('coder');
    // without groups both are listed
    const all = await catalog.forTurn('u1', noDocuments, null).getAgent('main', 'u1');
    expect(all?.substitutions.AGENTS).toContain('coder');
  });

  it('after freshMs the table is read again (a change made since is seen)', async () => {
    const { catalog, reads } = catalogOver([
      { agentId: 'mine', prompt: 'p', meta: { name: 'Mine', type: 'task' }, updatedAt: '2026-01-01T00:00:00.000Z' },
    ]);
    const stale = catalog.forTurn('u1', noDocuments, { rows: [], at: Date.now() - 2_000, freshMs: 1_000 });
    expect((await stale.listTaskAgents('u1')).map((a) => a.id)).toEqual(['coder', 'mine']);
    expect(reads.n).toBe(1);
  });
});

/**
 * The `inject_memory` documents of a turn's agent come from the turn's memory (which asks them with
 * the memory context, one request); when the tool runner does not answer, the prompt goes without
 * them (a warning), the agent still loads.
 */
describe("AgentCatalogService.forTurn: the agent's inject_memory documents", () => {
  const withMemory: AgentFiles = {
    dir: '/agents',
    agents: new Map([
      [
        'main',
        {
          id: 'main',
          meta: AgentMeta.parse({ name: 'Main', type: 'chat', inject_memory: ['user-memory/prefs.md'] }),
          prompt: 'You are main.',
        },
      ],
    ]),
    fragments: new Map(),
  };
  function catalogWith(warnings: string[]) {
    const repo = {
      list: () => Promise.resolve([]),
      find: () => Promise.resolve(null),
    } as unknown as UserAgentsRepository;
    const log = { warn: (_o: unknown, msg: string) => warnings.push(msg) } as unknown as Logger;
    const bus = { call: () => Promise.reject(new Error('not this way')) } as unknown as Bus;
    return new AgentCatalogService(
      withMemory,
      repo,
      bus,
      { listServers: () => Promise.resolve([]) },
      { SKALD_PROMPT_VARS: {} } as unknown as WorkerConfig,
      log,
    );
  }

  it("puts the turn memory's documents in the prompt, asked once", async () => {
    const asked: string[][] = [];
    const memory: MemoryDocuments = {
      documents: (paths) => (asked.push([...paths]), Promise.resolve([{ path: paths[0], content: 'likes tea' }])),
    };
    const turn = catalogWith([]).forTurn('u1', memory, { rows: [], at: Date.now(), freshMs: 60_000 });
    const agent = await turn.getAgent('main', 'u1');
    expect(agent?.prompt).toContain('<memory path="user-memory/prefs.md">\nlikes tea\n</memory>');
    expect(asked).toEqual([['user-memory/prefs.md']]);
  });

  it('an unreachable tool runner: the prompt without the documents, and a warning', async () => {
    const warnings: string[] = [];
    const memory: MemoryDocuments = { documents: () => Promise.reject(new Error('no responders')) };
    const agent = await catalogWith(warnings).forTurn('u1', memory, null).getAgent('main', 'u1');
    expect(agent?.prompt).toBe('You are main.');
    expect(warnings).toEqual(['inject_memory documents could not be read; the prompt goes without them']);
  });
});

/**
 * `exists` (a job's start checks its agent with it) answers what `getAgent` answers about existence,
 * for every agent id and user, with one row read and no request for memory documents or MCP servers.
 */
describe('AgentCatalogService.exists', () => {
  it('agrees with getAgent, reading one row and asking nothing else', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(row, { selector: (r) => r.agentId, maxLength: 4 }),
        fc.constantFrom('main', 'coder', 'mine', 'other', 'nobody', ''),
        fc.constantFrom('u1', 'u2'),
        async (rows, agentId, userId) => {
          const { catalog, reads } = catalogOver(rows);
          const expected = (await catalog.getAgent(agentId, userId)) !== null;
          const asked: string[] = [];
          (catalog as unknown as { bus: Bus }).bus = {
            call: (subject: string) => (asked.push(subject), Promise.reject(new Error('not this way'))),
          } as unknown as Bus;
          (catalog as unknown as { mcp: unknown }).mcp = {
            listServers: () => (asked.push('mcp'), Promise.reject(new Error('not this way'))),
          };
          reads.n = 0;
          expect(await catalog.exists(agentId, userId)).toBe(expected);
          expect(reads.n).toBe(1);
          expect(asked).toEqual([]);
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });
});
