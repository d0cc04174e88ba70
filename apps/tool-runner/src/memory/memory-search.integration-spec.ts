import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { MemoryRepository } from './memory.repository';
import { MemoryToolsService } from './memory-tools.service';

jest.setTimeout(120_000);

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

/**
 * The memory search takes its query from what a user or the model wrote (a turn's memory context
 * searches with the user's message, kept verbatim even with a NUL in it): whatever the text, the
 * search answers — hits or none — and never fails in Postgres (a NUL cannot be a text parameter).
 * A NUL separates words like a space.
 */
describe('MemoryRepository.search: any query text', () => {
  let ds: DataSource;
  let repo: MemoryRepository;
  let service: MemoryToolsService;
  const userId = randomUUID();

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
    repo = new MemoryRepository(ds);
    service = new MemoryToolsService(repo);
    await ds.query(
      `INSERT INTO memory_documents (id, scope, user_id, path, content) VALUES ($2, 'user', $1, 'notes.md', 'the answer is forty two')`,
      [userId, randomUUID()],
    );
    console.log(`memory search: seed=${SEED} — reproduce with FC_SEED=${SEED}`);
  });
  afterAll(async () => {
    await ds?.query(`DELETE FROM memory_documents WHERE user_id = $1`, [userId]);
    await ds?.destroy();
  });

  it('a NUL in the query is a word break, not a database error', async () => {
    expect((await repo.search(userId, 'forty\u0000two', 5)).map((h) => h.path)).toEqual(['notes.md']);
    expect((await service.forTurn(userId, [], 'answer\u0000')).context).toContain('user-memory/notes.md');
  });

  it('any text: the search answers, never throws', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 60 }),
          fc.string({
            unit: fc.constantFrom('\u0000', '\ud800', '\udfff', '&', '|', '!', ':', '*', "'", '\\', 'a', ' '),
            maxLength: 30,
          }),
        ),
        async (q) => {
          const hits = await repo.search(userId, q, 5);
          expect(Array.isArray(hits)).toBe(true);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });
});
