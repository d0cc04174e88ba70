import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { MemoryPath, parseMemoryPath } from './memory-path';
import { MEMORY_TURN_NAME, MemoryRepository } from './memory.repository';
import { MemoryToolsService } from './memory-tools.service';
import { tp } from '../testing-fixtures/workspace-fixture';

jest.setTimeout(180_000);

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.FC_RUNS ?? 60);

const KEYS = ['a.md', 'notes/b.md', 'ü/ß – 日本.md', 'x y.md', 'deep/er/c'];
const HUGE = 'ℵ'.repeat(300_000) + 'x'.repeat(100_000);
const content = fc.oneof(
  fc.constant(''),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom('\ufeff', '\u2028', '\\', "'", '"', '%', '_', 'a'), maxLength: 20 }),
  fc.constant(HUGE),
);
const doc = fc.record({
  owner: fc.constantFrom('me' as const, 'other' as const, 'shared' as const),
  key: fc.constantFrom(...KEYS),
  content,
});
/** What an agent's `inject_memory` may name: its own, shared, or junk (not memory, a directory, climbing out, NUL). */
const path = fc.oneof(
  fc.record({ root: fc.constantFrom('user-memory', 'shared-memory'), key: fc.constantFrom(...KEYS) }),
  fc.constantFrom(
    'user-memory',
    'shared-memory/',
    'notes/a.md',
    '/etc/passwd',
    'user-memory/../shared-memory/x',
    'user-memory/a\u0000b',
    '',
  ),
);

/**
 * The documents of `forTurn` (the agents' inject_memory files; MemoryRepository.documentsAndSearch)
 * against the one `get` per path it replaces: over generated documents (the caller's, another
 * user's at the same paths, shared; empty, huge, unicode content) and path lists (duplicates,
 * missing, not memory, a directory, climbing out, NUL) both answer the same — another user's
 * document never reads — and the answer costs one statement whatever the number of paths.
 */
describe('MemoryToolsService.forTurn documents: one statement', () => {
  let ds: DataSource;
  let repo: MemoryRepository;
  let service: MemoryToolsService;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
    repo = new MemoryRepository(ds);
    service = new MemoryToolsService(repo);
    console.log(`memory read one-statement: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  /** The former readDocuments: one `get` per memory path. */
  async function onePerPath(userId: string, paths: string[]) {
    const out: Array<{ path: string; content: string | null }> = [];
    for (const p of paths) {
      let m: MemoryPath;
      try {
        m = parseMemoryPath(tp(p));
        if (m.key === '') throw new Error('directory');
      } catch {
        out.push({ path: p, content: null });
        continue;
      }
      out.push({ path: p, content: await repo.get({ userId, scope: m.scope, key: m.key }) });
    }
    return out;
  }

  it('answers what one get per path answered', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(doc, { maxLength: 8 }),
        fc.array(path, { maxLength: 8 }),
        fc.boolean(),
        async (docs, asked, meHasNone) => {
          const me = randomUUID();
          const other = randomUUID();
          // Shared documents are everyone's: each run writes under its own prefix.
          const prefix = `run-${randomUUID()}`;
          for (const d of docs) {
            if (meHasNone && d.owner === 'me') continue;
            await ds.query(
              `INSERT INTO memory_documents (id, scope, user_id, path, content) VALUES ($1, $2, $3, $4, $5)
               ON CONFLICT DO NOTHING`,
              [
                randomUUID(),
                d.owner === 'shared' ? 'shared' : 'user',
                d.owner === 'shared' ? null : d.owner === 'me' ? me : other,
                `${prefix}/${d.key}`,
                d.content,
              ],
            );
          }
          const paths = asked.map((p) => (typeof p === 'string' ? p : `${p.root}/${prefix}/${p.key}`));
          const expected = await onePerPath(me, paths);
          expect((await service.forTurn(me, paths, null)).documents).toEqual(expected);
          // Another user's documents at the same paths never read as mine.
          const mine = new Set(
            (
              await ds.query<Array<{ content: string }>>(
                `SELECT content FROM memory_documents WHERE user_id = $1 OR (scope = 'shared' AND path LIKE $2)`,
                [me, `${prefix}/%`],
              )
            ).map((r) => r.content),
          );
          for (const r of expected) if (r.content !== null) expect(mine.has(r.content)).toBe(true);
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('is one statement for any number of paths, none for no memory path', async () => {
    const me = randomUUID();
    await ds.query(
      `INSERT INTO memory_documents (id, scope, user_id, path, content) VALUES ($1, 'user', $2, 'p.md', 'mine')`,
      [randomUUID(), me],
    );
    // The turn's statement goes by name to the pool (MEMORY_TURN_NAME); anything else through TypeORM.
    const seen: string[] = [];
    const pool = (ds.driver as unknown as { master: { query: (...a: unknown[]) => unknown } }).master;
    const poolQuery = pool.query.bind(pool);
    const poolSpy = jest.spyOn(pool, 'query').mockImplementation((...a: unknown[]) => {
      const q = a[0] as string | { name?: string };
      seen.push(typeof q === 'string' ? q : (q.name ?? ''));
      return poolQuery(...a);
    });
    const query = ds.query.bind(ds);
    const spy = jest.spyOn(ds, 'query').mockImplementation(((q: string, p?: unknown[]) => {
      seen.push(q);
      return query(q, p);
    }) as typeof ds.query);
    try {
      const paths = [
        'user-memory/p.md',
        'shared-memory/none.md',
        'user-memory/p.md',
        'workspace/x',
        'user-memory/q.md',
      ];
      expect((await service.forTurn(me, paths, null)).documents).toEqual([
        { path: 'user-memory/p.md', content: 'mine' },
        { path: 'shared-memory/none.md', content: null },
        { path: 'user-memory/p.md', content: 'mine' },
        { path: 'workspace/x', content: null },
        { path: 'user-memory/q.md', content: null },
      ]);
      expect(seen).toEqual([MEMORY_TURN_NAME]);
      expect((await service.forTurn(me, ['/etc/passwd', 'user-memory/'], null)).documents).toEqual([
        { path: '/etc/passwd', content: null },
        { path: 'user-memory/', content: null },
      ]);
      expect(seen).toHaveLength(1);
    } finally {
      spy.mockRestore();
      poolSpy.mockRestore();
    }
  });
});
