import { decodeRow, fromPgText, toPgText } from '@skald/persistence/pg-text';
import { queryRows } from '@skald/persistence/query-rows';
import type { ChatHistoryRow, SessionsRow, ToolCallsRow } from '@skald/persistence';
import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';

/** A conversation the search found: its best-ranked message's snippet, and when it last had a message. */
export type SearchHitRow = Pick<SessionsRow, 'id' | 'source' | 'title'> & {
  rank: number;
  snippet: string;
  last_message_at: Date | null;
};

/** The first exchange of a conversation, as `firstExchange` reads it. */
type ExchangeRow = Pick<SessionsRow, 'user_id' | 'agent_id'> & {
  pin: string | null;
  question: ChatHistoryRow['content'];
  answer: ChatHistoryRow['content'];
};

/** Characters of a message that are indexed for search (the index's expression uses the same bound). */
export const SEARCH_INDEXED_CHARS = 20_000;

/** The first exchange of a conversation: what its title is written from. */
export interface FirstExchange {
  userId: string;
  agentId: string;
  pinnedClient: string | null;
  question: string;
  answer: string;
}

/**
 * Conversations of one user: titles, deletion, search, export and reopening. Every method takes
 * the tenant, so an unscoped query does not compile; a foreign id reads like a missing one.
 */
@Injectable()
export class ConversationsRepository {
  constructor(private readonly ds: Database) {}

  async rename(
    scope: { userId: string; sessionId: string },
    title: string,
  ): Promise<{ id: string; title: string } | null> {
    const rows = await queryRows<{ id: string; title: string }>(
      this.ds,
      `UPDATE sessions SET title = $3, title_source = 'user', updated_at = now()
        WHERE id = $1 AND user_id = $2 RETURNING id, title`,
      [scope.sessionId, scope.userId, toPgText(title)],
    );
    return rows[0] ? decodeRow(rows[0]) : null;
  }

  /** Sets a generated title unless the conversation already has one (the user's wins). */
  async setGeneratedTitle(sessionId: string, title: string): Promise<boolean> {
    const rows = await queryRows<Pick<SessionsRow, 'id'>>(
      this.ds,
      `UPDATE sessions SET title = $2, title_source = 'generated' WHERE id = $1 AND title IS NULL RETURNING id`,
      [sessionId, toPgText(title)],
    );
    return rows.length > 0;
  }

  /**
   * The first user message of an untitled interactive conversation and the first answer after
   * it (root frames, shown rows only); null when it has a title or no answer yet.
   */
  async firstExchange(sessionId: string): Promise<FirstExchange | null> {
    const rows = await queryRows<ExchangeRow>(
      this.ds,
      `SELECT s.user_id, s.agent_id, COALESCE(p.client, s.client_pin) AS pin, u.content AS question, a.content AS answer
         FROM sessions s
         LEFT JOIN llm_client_pins p ON p.user_id = s.user_id AND p.source = s.source AND s.is_active
         JOIN LATERAL (
           SELECT h.content, h.ord FROM chat_history h JOIN stack_frames f ON f.id = h.frame_id
            WHERE h.session_id = s.id AND f.depth = 0 AND h.role = 'user' AND NOT h.is_synthetic AND h.status = 'ok'
            ORDER BY h.ord LIMIT 1) u ON true
         JOIN LATERAL (
           SELECT h.content FROM chat_history h JOIN stack_frames f ON f.id = h.frame_id
            WHERE h.session_id = s.id AND f.depth = 0 AND h.role = 'assistant' AND h.status = 'ok'
              AND h.ord > u.ord AND h.content <> ''
              AND NOT EXISTS (SELECT 1 FROM tool_calls c WHERE c.message_id = h.id)
            ORDER BY h.ord LIMIT 1) a ON true
        WHERE s.id = $1 AND s.title IS NULL AND s.is_interactive AND NOT s.is_ephemeral`,
      [sessionId],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      userId: String(r.user_id),
      agentId: String(r.agent_id),
      pinnedClient: r.pin ?? null,
      question: fromPgText(r.question) ?? '',
      answer: fromPgText(r.answer) ?? '',
    };
  }

  /**
   * Deletes the session and every row it owns (frames, chat rows, tool calls, inbox, events,
   * todos, grants, summaries, lease: ON DELETE CASCADE) and its scratchpad when no other session
   * reads it. The LLM ledger keeps its rows (it is what the daily budget is counted from).
   */
  async delete(scope: { userId: string; sessionId: string }): Promise<{ source: string; wasActive: boolean } | null> {
    return this.ds.transaction(async (tx) => {
      const rows = await queryRows<Pick<SessionsRow, 'source' | 'is_active' | 'scratchpad_session_id'>>(
        tx,
        `DELETE FROM sessions WHERE id = $1 AND user_id = $2 RETURNING source, is_active, scratchpad_session_id`,
        [scope.sessionId, scope.userId],
      );
      const r = rows[0];
      if (!r) return null;
      const pad = r.scratchpad_session_id ?? scope.sessionId;
      await tx.query(
        `DELETE FROM session_scratchpad WHERE scratchpad_session_id = $1
            AND NOT EXISTS (SELECT 1 FROM sessions WHERE scratchpad_session_id = $1)`,
        [pad],
      );
      return { source: r.source, wasActive: r.is_active };
    });
  }

  /**
   * Full-text search over the user's own messages (Postgres `websearch_to_tsquery`: any text is a
   * valid query), one hit per conversation, best rank first, with a snippet of its best message.
   */
  async search(scope: {
    userId: string;
    q: string;
    source?: string;
    page: number;
    perPage: number;
  }): Promise<{ items: SearchHitRow[]; total: number }> {
    const params: unknown[] = [scope.userId, toPgText(scope.q), SEARCH_INDEXED_CHARS];
    let sourceCond = '';
    if (scope.source) {
      params.push(scope.source);
      sourceCond = `AND s.source = $4`;
    }
    const matches = `
      WITH query AS (SELECT websearch_to_tsquery('simple'::regconfig, $2) AS q),
      hits AS (
        SELECT DISTINCT ON (h.session_id) h.session_id, h.content,
               ts_rank(to_tsvector('simple'::regconfig, left(h.content, $3)), query.q) AS rank
          FROM chat_history h
          JOIN sessions s ON s.id = h.session_id, query
         WHERE s.user_id = $1 ${sourceCond} AND s.is_interactive
           AND h.role = 'user' AND NOT h.is_synthetic AND h.status = 'ok'
           AND to_tsvector('simple'::regconfig, left(h.content, $3)) @@ query.q
         ORDER BY h.session_id, rank DESC, h.ord DESC)`;
    const total = await queryRows<{ n: number }>(this.ds, `${matches} SELECT count(*)::int AS n FROM hits`, params);
    const items = await queryRows<SearchHitRow>(
      this.ds,
      `${matches}
       SELECT s.id, s.source, s.title, hits.rank,
              ts_headline('simple'::regconfig, left(hits.content, $3), query.q,
                          'MaxWords=24, MinWords=8, MaxFragments=1, StartSel="", StopSel=""') AS snippet,
              (SELECT max(created_at) FROM chat_history WHERE session_id = s.id) AS last_message_at
         FROM hits JOIN sessions s ON s.id = hits.session_id, query
        ORDER BY hits.rank DESC, last_message_at DESC NULLS LAST, s.id
        LIMIT ${scope.perPage} OFFSET ${(scope.page - 1) * scope.perPage}`,
      params,
    );
    return { items: items.map(decodeRow), total: Number(total[0]?.n ?? 0) };
  }

  /** The rows a conversation shows (root frames, shown rows, oldest first) and their tool calls. */
  async transcript(sessionId: string): Promise<{ rows: ChatHistoryRow[]; calls: ToolCallsRow[] }> {
    const rows = await queryRows<ChatHistoryRow>(
      this.ds,
      `SELECT h.* FROM chat_history h JOIN stack_frames f ON f.id = h.frame_id
        WHERE h.session_id = $1 AND f.depth = 0 AND NOT h.is_synthetic AND h.status = 'ok'
        ORDER BY h.ord`,
      [sessionId],
    );
    const calls = await queryRows<ToolCallsRow>(
      this.ds,
      `SELECT c.* FROM tool_calls c JOIN stack_frames f ON f.id = c.frame_id
        WHERE c.session_id = $1 AND f.depth = 0 ORDER BY c.ord`,
      [sessionId],
    );
    return { rows: rows.map(decodeRow), calls: calls.map(decodeRow) };
  }

  /**
   * Makes an interactive session of the user the active one of its source (the previous active
   * one stays as it is). Null for a foreign, unknown or non-interactive session.
   */
  async activate(scope: {
    userId: string;
    sessionId: string;
  }): Promise<{ source: string; changed: boolean; clientPin: string | null } | null> {
    return this.ds.transaction(async (tx) => {
      const found = await queryRows<Pick<SessionsRow, 'source' | 'is_active' | 'client_pin'>>(
        tx,
        `SELECT source, is_active, client_pin FROM sessions
          WHERE id = $1 AND user_id = $2 AND is_interactive AND NOT is_ephemeral`,
        [scope.sessionId, scope.userId],
      );
      const s = found[0];
      if (!s) return null;
      if (s.is_active) return { source: s.source, changed: false, clientPin: s.client_pin };
      // The same lock as the creation of an active session: one active session per (user, source).
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`${scope.userId}/${s.source}`]);
      await tx.query(
        `UPDATE sessions SET is_active = false, updated_at = now() WHERE user_id = $1 AND source = $2 AND is_active`,
        [scope.userId, s.source],
      );
      await tx.query(`UPDATE sessions SET is_active = true, updated_at = now() WHERE id = $1`, [scope.sessionId]);
      return { source: s.source, changed: true, clientPin: s.client_pin };
    });
  }
}
