import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DataSource, QueryRunner } from 'typeorm';
import { MemoryPath, memoryVirtual, MemoryScope, parseMemoryPath } from './memory-path';
import { MEMORY_TURN_NAME, MemoryHit, MemoryRepository } from './memory.repository';
import { MemoryToolsService } from './memory-tools.service';
import { tp } from '../testing-fixtures/workspace-fixture';

jest.setTimeout(300_000);

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.FC_RUNS ?? 150);

// ------------------------------------------------------------------ the two former statements, verbatim

/** The former `MemoryRepository.getMany` (`tools.memory_read`). */
const OLD_DOCUMENTS = `SELECT k.i, d.content
         FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS k(scope, path, i)
         LEFT JOIN memory_documents d
           ON d.scope = k.scope AND d.path = k.path
          AND ((k.scope = 'user' AND d.user_id = $1::uuid) OR (k.scope = 'shared' AND $1::uuid IS NOT NULL))
        ORDER BY k.i`;

/** The former `MemoryRepository.search` (`tools.memory_context`, `memory_search`). */
const OLD_SEARCH = `WITH q AS (
         SELECT to_tsquery('simple', string_agg(quote_literal(l), ' | ')) AS q
           FROM unnest(tsvector_to_array(to_tsvector('english', $2))) AS l
       )
       SELECT d.scope, d.path,
              ts_headline('english', d.content, q.q,
                'MaxFragments=2, MaxWords=18, MinWords=6, FragmentDelimiter=" … ", StartSel="", StopSel=""') AS snippet,
              ts_rank(d.tsv, q.q) AS rank
         FROM memory_documents d, q
        WHERE q.q IS NOT NULL AND d.tsv @@ q.q AND (d.scope = 'shared' OR d.user_id = $1)
        ORDER BY rank DESC, d.updated_at DESC
        LIMIT $3`;

type Db = { query: (sql: string, params?: unknown[]) => Promise<unknown> };

/**
 * What `body` sends on the transaction's connection: the text of each statement, or the name of
 * a named one (the turn's statement is sent by name, MEMORY_TURN_NAME).
 */
async function statementsDuring<T>(qr: QueryRunner, body: () => Promise<T>): Promise<{ result: T; seen: string[] }> {
  const client = (qr as unknown as { databaseConnection: { query: (...a: unknown[]) => unknown } }).databaseConnection;
  const original = client.query;
  const seen: string[] = [];
  client.query = function (this: unknown, ...a: unknown[]) {
    const q = a[0] as string | { name?: string; text?: string };
    seen.push(typeof q === 'string' ? q : (q.name ?? q.text ?? ''));
    return original.apply(this, a);
  };
  try {
    return { result: await body(), seen };
  } finally {
    client.query = original;
  }
}

async function oldSearch(db: Db, userId: string, query: string, limit: number): Promise<MemoryHit[]> {
  const rows = (await db.query(OLD_SEARCH, [userId, query.replaceAll('\u0000', ' '), limit])) as Array<{
    scope: MemoryScope;
    path: string;
    snippet: string;
    rank: number;
  }>;
  return rows.map((r) => ({ ...r, rank: Number(r.rank) }));
}

/** The former `readDocuments` (`tools.memory_read`): one statement for every memory path. */
async function oldDocuments(db: Db, userId: string, paths: string[]) {
  const parsed = paths.map((path): MemoryPath | null => {
    try {
      const p = parseMemoryPath(tp(path));
      return p.key === '' ? null : p;
    } catch {
      return null;
    }
  });
  const keys = parsed.flatMap((p) => (p ? [p] : []));
  const contents: Array<string | null> = keys.map(() => null);
  if (keys.length > 0) {
    const rows = (await db.query(OLD_DOCUMENTS, [userId, keys.map((k) => k.scope), keys.map((k) => k.key)])) as Array<{
      i: string;
      content: string | null;
    }>;
    for (const r of rows) contents[Number(r.i) - 1] = r.content ?? null;
  }
  let next = 0;
  return paths.map((path, i) => ({ path, content: parsed[i] ? contents[next++] : null }));
}

/** The former `context` (`tools.memory_context`). */
async function oldContext(db: Db, userId: string, query: string, maxChars = 2000): Promise<string | null> {
  if (query.trim() === '') return null;
  const hits = await oldSearch(db, userId, query, 5);
  if (hits.length === 0) return null;
  let text = 'Memory documents that may be relevant (read them with read_file for more):';
  for (const h of hits) {
    const line = `\n- ${memoryVirtual(h.scope, h.path)}: ${h.snippet.replace(/\s+/g, ' ').trim()}`;
    if (text.length + line.length > maxChars) {
      if (text.includes('\n- ')) break;
      text += line.slice(0, Math.max(0, maxChars - text.length - 1)) + '…';
      break;
    }
    text += line;
  }
  return text;
}

// ------------------------------------------------------------------ generated states

/** Words no other spec writes (stems shared by some), English stop words, and poison. */
const WORDS = ['quokka', 'quokkas', 'marmalade', 'marmalades', 'zeppelin', 'fjords', 'kumquat', 'obsidians'];
const STOP = ['the', 'and', 'is', 'of'];
const POISON = ['\u0000', '\ud800', '\udfff', '&', '|', '!', '(', ')', ':', '*', "'", '\\', ':*', '<->', '\u2028', ' '];
const KEYS = ['a.md', 'notes/b.md', 'ü/ß – 日本.md', 'x y.md', 'deep/er/c'];

const word = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...WORDS) },
  { weight: 2, arbitrary: fc.constantFrom(...STOP) },
  { weight: 2, arbitrary: fc.constantFrom(...POISON) },
);
const text = (maxLength: number) =>
  fc
    .tuple(fc.array(word, { maxLength }), fc.constantFrom(' ', '\n', '\u0000', '', ' & ', ' | ', ' !'))
    .map(([ws, sep]) => ws.join(sep));
/** A document's text (no NUL: Postgres text cannot hold one); now and then long, to move the headline. */
const content = fc.oneof(
  { weight: 8, arbitrary: text(30).map((t) => t.replaceAll('\u0000', ' ')) },
  { weight: 1, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.constantFrom(...WORDS).map((w) => `${'filler words here '.repeat(3000)}${w} end`) },
);
const doc = fc.record({
  owner: fc.constantFrom('me' as const, 'other' as const, 'shared' as const),
  key: fc.constantFrom(...KEYS),
  content,
});
/** The user's message: words and poison, tsquery syntax, blank, huge (the contract's 64 KiB). */
const query = fc.oneof(
  { weight: 6, arbitrary: text(12) },
  { weight: 2, arbitrary: fc.string({ unit: fc.constantFrom(...POISON, 'a', 'quokka'), maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 60 }) },
  { weight: 1, arbitrary: fc.constantFrom('', '   ', '\u0000', "quokka:* & !(fjords | 'kumquat')", 'a\\'.repeat(500)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(...WORDS).map((w) => `${w} `.repeat(Math.floor((64 * 1024) / (w.length + 1)))),
  },
);
/** What an agent's `inject_memory` may name: its own, shared, or junk (not memory, a directory, climbing out, NUL). */
const path = fc.oneof(
  fc.record({ root: fc.constantFrom('user-memory', 'shared-memory'), key: fc.constantFrom(...KEYS) }),
  fc.constantFrom(
    'user-memory',
    'shared-memory/',
    'notes/a.md',
    '/etc/passwd',
    'user-memory/../x',
    'user-memory/a\u0000b',
    '',
  ),
);

/**
 * A turn's memory in one statement (`MemoryToolsService.forTurn` → `documentsAndSearch`, the
 * `tools.memory_turn` request) against the two statements it replaces (`tools.memory_read`'s
 * documents and `tools.memory_context`'s search), verbatim: over generated documents (the caller's,
 * another user's at the same paths, shared; empty, long, poison text), paths (duplicates, missing,
 * junk) and queries (NUL, lone surrogates, tsquery operators, huge) both answer the same documents
 * and the same context — same hits, ranking, snippets and limit — in one statement. Each run is one
 * REPEATABLE READ transaction, rolled back: both sides read one snapshot.
 */
describe('MemoryToolsService.forTurn: the documents and the memory context in one statement', () => {
  let ds: DataSource;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
    console.log(`memory turn differential: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  async function inSnapshot(body: (db: Db, qr: QueryRunner) => Promise<void>): Promise<void> {
    const qr = ds.createQueryRunner();
    await qr.connect();
    await qr.startTransaction('REPEATABLE READ');
    try {
      await body(qr.manager, qr);
    } finally {
      await qr.rollbackTransaction();
      await qr.release();
    }
  }

  async function insert(
    db: Db,
    docs: Array<{ owner: 'me' | 'other' | 'shared'; key: string; content: string }>,
    me: string,
    other: string,
    prefix: string,
  ) {
    // Distinct times: ranking ties are broken by `updated_at`, so both orders are defined.
    let t = Date.parse('2026-01-01T00:00:00Z');
    for (const d of docs) {
      t += 1000;
      await db.query(
        `INSERT INTO memory_documents (id, scope, user_id, path, content, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
        [
          randomUUID(),
          d.owner === 'shared' ? 'shared' : 'user',
          d.owner === 'shared' ? null : d.owner === 'me' ? me : other,
          `${prefix}/${d.key}`,
          d.content,
          new Date(t),
        ],
      );
    }
  }

  it('answers what the two former statements answered', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(doc, { maxLength: 10 }),
        fc.array(path, { maxLength: 6 }),
        fc.option(query, { nil: null, freq: 6 }),
        fc.option(fc.integer({ min: 200, max: 3000 }), { nil: undefined }),
        fc.boolean(),
        async (docs, asked, q, maxChars, generic) => {
          await inSnapshot(async (db, qr) => {
            // The named statement's generic plan (what a connection settles on) as well as custom ones.
            if (generic) await db.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
            const me = randomUUID();
            const other = randomUUID();
            const prefix = `run-${randomUUID()}`;
            await insert(db, docs, me, other, prefix);
            const paths = asked.map((p) => (typeof p === 'string' ? p : `${p.root}/${prefix}/${p.key}`));
            const repo = new MemoryRepository(db as unknown as DataSource);

            const { result: got, seen } = await statementsDuring(qr, () =>
              new MemoryToolsService(repo).forTurn(me, paths, q, maxChars),
            );
            expect(got).toEqual({
              documents: await oldDocuments(db, me, paths),
              context: q === null ? null : await oldContext(db, me, q, maxChars),
            });
            expect(seen.length).toBeLessThanOrEqual(1);
            expect(seen.every((name) => name === MEMORY_TURN_NAME)).toBe(true);

            // The hits themselves (snippets, ranks, order), and the memory_search tool's search.
            if (q !== null) {
              const { hits } = await repo.documentsAndSearch(me, [], q, 5);
              expect(hits).toEqual(await oldSearch(db, me, q, 5));
              expect(await repo.search(me, q, 10)).toEqual(await oldSearch(db, me, q, 10));
            }
          });
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('is one statement for documents and a query, none when there is neither', async () => {
    await inSnapshot(async (db, qr) => {
      const me = randomUUID();
      await db.query(
        `INSERT INTO memory_documents (id, scope, user_id, path, content) VALUES ($1, 'user', $2, 'p.md', 'mine: quokka marmalade')`,
        [randomUUID(), me],
      );
      const seen: string[] = [];
      const service = new MemoryToolsService(new MemoryRepository(db as unknown as DataSource));
      const counted = async <T>(body: () => Promise<T>): Promise<T> => {
        const r = await statementsDuring(qr, body);
        seen.push(...r.seen);
        return r.result;
      };
      const both = await counted(() =>
        service.forTurn(me, ['user-memory/p.md', 'workspace/x', 'shared-memory/none.md'], 'Quokkas?'),
      );
      expect(both.documents).toEqual([
        { path: 'user-memory/p.md', content: 'mine: quokka marmalade' },
        { path: 'workspace/x', content: null },
        { path: 'shared-memory/none.md', content: null },
      ]);
      expect(both.context).toContain('user-memory/p.md: mine: quokka marmalade');
      expect(seen).toEqual([MEMORY_TURN_NAME]);
      expect(await counted(() => service.forTurn(me, ['/etc/passwd', 'user-memory/'], '  \n'))).toEqual({
        documents: [
          { path: '/etc/passwd', content: null },
          { path: 'user-memory/', content: null },
        ],
        context: null,
      });
      expect(await counted(() => service.forTurn(me, [], null))).toEqual({ documents: [], context: null });
      expect(seen).toHaveLength(1);
      // A NUL is a word break, also here.
      expect((await counted(() => service.forTurn(me, [], 'marmalade\u0000quokka'))).context).toContain(
        'user-memory/p.md',
      );
      expect(seen).toEqual([MEMORY_TURN_NAME, MEMORY_TURN_NAME]);
    });
  });
});
