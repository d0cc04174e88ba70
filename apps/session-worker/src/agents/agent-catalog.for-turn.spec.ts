import fc from 'fast-check';
import { AgentMeta } from '@skald/contracts';
import type { Bus } from '@skald/messaging';
import type { Logger } from '@skald/service-kit';
import type { WorkerConfig } from '../config';
import { AgentCatalogService } from './agent-catalog.service';
import type { AgentFiles } from './agent-files';
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
  ),
  updatedAt: fc.constant('2026-01-01T00:00:00.000Z'),
});

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
        const turn = catalog.forTurn('u1', byAgentId(rows), Date.now(), 60_000);
        const expected = await Promise.all(['main', 'coder', 'mine', 'other'].map((id) => catalog.getAgent(id, 'u1')));
        const expectedList = await catalog.listTaskAgents('u1');
        reads.n = 0;
        expect(await Promise.all(['main', 'coder', 'mine', 'other'].map((id) => turn.getAgent(id, 'u1')))).toEqual(
          expected,
        );
        expect(await turn.listTaskAgents('u1')).toEqual(expectedList);
        expect(reads.n).toBe(0);
        // Another user's reads are not answered from u1's rows.
        expect(await turn.getAgent('mine', 'u2')).toEqual(await catalog.getAgent('mine', 'u2'));
        expect(reads.n).toBeGreaterThan(0);
      }),
      { seed: SEED, numRuns: 60 },
    );
  });

  it('after freshMs the table is read again (a change made since is seen)', async () => {
    const { catalog, reads } = catalogOver([
      { agentId: 'mine', prompt: 'p', meta: { name: 'Mine', type: 'task' }, updatedAt: '2026-01-01T00:00:00.000Z' },
    ]);
    const stale = catalog.forTurn('u1', [], Date.now() - 2_000, 1_000);
    expect((await stale.listTaskAgents('u1')).map((a) => a.id)).toEqual(['coder', 'mine']);
    expect(reads.n).toBe(1);
  });
});
