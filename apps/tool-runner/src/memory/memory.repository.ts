import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { Database } from '@skald/persistence/database';
import { preparedRows, queryRows } from '@skald/persistence/query-rows';
import type { MemoryDocumentsRow } from '@skald/persistence';
import { MemoryScope } from './memory-path';

/** A document's address, always with the tenant: `userId` scopes `user` documents (ignored for `shared`). */
export interface MemoryKey {
  userId: string;
  scope: MemoryScope;
  key: string;
}

export interface MemoryHit {
  scope: MemoryScope;
  path: string;
  snippet: string;
  rank: number;
}

/** Memory documents in Postgres (`memory_documents`); every query scoped by the caller. */
@Injectable()
export class MemoryRepository {
  constructor(private readonly db: Database) {}

  async get(k: MemoryKey): Promise<string | null> {
    const rows = await queryRows<Pick<MemoryDocumentsRow, 'content'>>(
      this.db,
      `SELECT content FROM memory_documents WHERE ${owner(k)} AND path = $2`,
      [k.userId, k.key],
    );
    return rows[0]?.content ?? null;
  }

  /**
   * A turn's memory in one statement: the documents at `keys`, in the order asked (null where
   * missing; a `user` key reads only `userId`'s document, as `get`), and — when `query` is not
   * null — the `search` of `query` (the same ranking and limit, computed by the same SQL). Sent by
   * name (once a turn): the tsquery is computed at run time either way, so a plan per call bought
   * nothing and cost Postgres more than the statement's execution.
   */
  async documentsAndSearch(
    userId: string,
    keys: Array<{ scope: MemoryScope; key: string }>,
    query: string | null,
    limit: number,
  ): Promise<{ contents: Array<string | null>; hits: MemoryHit[] }> {
    const rows = await preparedRows<{
      doc: string | null;
      content: string | null;
      scope: MemoryScope | null;
      path: string | null;
      snippet: string | null;
      rank: number | null;
    }>(this.db, MEMORY_TURN_NAME, MEMORY_TURN_SQL, [
      userId,
      query === null ? null : searchable(query),
      limit,
      keys.map((k) => k.scope),
      keys.map((k) => k.key),
    ]);
    const contents: Array<string | null> = keys.map(() => null);
    const hits: MemoryHit[] = [];
    for (const r of rows) {
      if (r.doc !== null) contents[Number(r.doc) - 1] = r.content ?? null;
      else
        hits.push({
          scope: r.scope as MemoryScope,
          path: r.path ?? '',
          snippet: r.snippet ?? '',
          rank: Number(r.rank),
        });
    }
    return { contents, hits };
  }

  /**
   * Read-modify-write of one document in a transaction (the row locked, or the insert raced):
   * `compute` gets the current content (null when new) and returns the new one.
   */
  async modify<T extends { content: string }>(
    k: MemoryKey,
    actorId: string,
    compute: (current: string | null) => T,
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const done = await this.db.transaction(async (tx: EntityManager) => {
        const rows = await queryRows<Pick<MemoryDocumentsRow, 'id' | 'content'>>(
          tx,
          `SELECT id, content FROM memory_documents WHERE ${owner(k)} AND path = $2 FOR UPDATE`,
          [k.userId, k.key],
        );
        const result = compute(rows[0]?.content ?? null);
        if (rows[0]) {
          await tx.query(
            `UPDATE memory_documents SET content = $2, updated_at = now(), updated_by = $3 WHERE id = $1`,
            [rows[0].id, result.content, actorId],
          );
          return result;
        }
        const inserted = await queryRows<Pick<MemoryDocumentsRow, 'id'>>(
          tx,
          `INSERT INTO memory_documents (id, scope, user_id, path, content, updated_by)
           VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING id`,
          [randomUUID(), k.scope, k.scope === 'user' ? k.userId : null, k.key, result.content, actorId],
        );
        return inserted.length === 1 ? result : null;
      });
      if (done) return done;
      if (attempt >= 3) throw new Error('memory document write kept racing with another writer');
    }
  }

  /** Documents under `prefix` (a key, '' for all), by path. */
  async list(k: MemoryKey, limit: number): Promise<Array<{ path: string; size: number; updatedAt: Date }>> {
    const rows = await queryRows<Pick<MemoryDocumentsRow, 'path' | 'updated_at'> & { size: number }>(
      this.db,
      `SELECT path, octet_length(content) AS size, updated_at FROM memory_documents
        WHERE ${owner(k)} AND ($2 = '' OR path LIKE $3 ESCAPE '\\') ORDER BY path LIMIT $4`,
      [k.userId, k.key, `${k.key.replace(/[\\%_]/g, (c) => `\\${c}`)}/%`, limit],
    );
    return rows.map((r) => ({ path: r.path, size: Number(r.size), updatedAt: r.updated_at }));
  }

  /**
   * Full-text search over the caller's documents and the shared ones. The query's words (stemmed)
   * are OR-ed, so a natural sentence finds documents that share some of its words; ranked.
   * The query is what a user or the model wrote: a NUL (which no Postgres text can hold) breaks
   * words like a space.
   */
  async search(userId: string, query: string, limit: number): Promise<MemoryHit[]> {
    const rows = await queryRows<{ scope: MemoryScope; path: string; snippet: string; rank: number }>(
      this.db,
      `WITH q AS (${SEARCH_QUERY}) SELECT scope, path, snippet, rank FROM (${SEARCH_HITS}) h`,
      [userId, searchable(query), limit],
    );
    return rows.map((r) => ({ ...r, rank: Number(r.rank) }));
  }
}

/** A search's text as a parameter: a NUL (which no Postgres text can hold) breaks words like a space. */
function searchable(query: string): string {
  return query.replaceAll('\u0000', ' ');
}

/** The search's query (`$2`) as a tsquery: its words, stemmed, OR-ed; NULL when it has none (or `$2` is NULL). */
const SEARCH_QUERY = `
  SELECT to_tsquery('simple', string_agg(quote_literal(l), ' | ')) AS q
    FROM unnest(tsvector_to_array(to_tsvector('english', $2::text))) AS l`;

/** The documents of `$1` and the shared ones that match `q`, best first (rank, then the newest), at most `$3`. */
const SEARCH_HITS = `
  SELECT d.scope, d.path,
         ts_headline('english', d.content, q.q,
           'MaxFragments=2, MaxWords=18, MinWords=6, FragmentDelimiter=" … ", StartSel="", StopSel=""') AS snippet,
         ts_rank(d.tsv, q.q) AS rank, d.updated_at
    FROM memory_documents d, q
   WHERE q.q IS NOT NULL AND d.tsv @@ q.q AND (d.scope = 'shared' OR d.user_id = $1)
   ORDER BY rank DESC, d.updated_at DESC
   LIMIT $3`;

/** The name of {@link MEMORY_TURN_SQL} (prepared once per connection; a new text needs a new name). */
export const MEMORY_TURN_NAME = 'skald_memory_turn_v1';

/** `documentsAndSearch`: `$1` user, `$2` the searchable query or null, `$3` limit, `$4`/`$5` scopes and paths. */
export const MEMORY_TURN_SQL = `WITH q AS (${SEARCH_QUERY}), hits AS (${SEARCH_HITS})
 SELECT k.i AS doc, d.content, NULL::text AS scope, NULL::text AS path, NULL::text AS snippet,
        NULL::real AS rank, NULL::timestamptz AS updated_at
   FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS k(scope, path, i)
   LEFT JOIN memory_documents d
     ON d.scope = k.scope AND d.path = k.path
    AND ((k.scope = 'user' AND d.user_id = $1::uuid) OR (k.scope = 'shared' AND $1::uuid IS NOT NULL))
 UNION ALL
 SELECT NULL, NULL, h.scope, h.path, h.snippet, h.rank, h.updated_at FROM hits h
 ORDER BY doc, rank DESC, updated_at DESC`;

/** The tenant condition: a user's own documents, or the shared ones. `$1` is the user id. */
function owner(k: MemoryKey): string {
  return k.scope === 'user' ? `scope = 'user' AND user_id = $1` : `scope = 'shared' AND $1::uuid IS NOT NULL`;
}
