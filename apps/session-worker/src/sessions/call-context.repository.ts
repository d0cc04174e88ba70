import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { CONTEXT_EXCERPT_MAX } from '@skald/contracts';
import { fromPgText, PG_TEXT_MARK } from '@skald/persistence/pg-text';
import { queryRows } from '@skald/persistence/query-rows';

export interface CallContextRow {
  session_id: string;
  tool_call_id: string | null;
  user_id: string;
  title: string | null;
  agent_id: string;
  /** The tail of the last assistant text before the call (stored form), or null. */
  said: string | null;
}

/** A text stored through the pg-text codec is read whole (bounded) to be decoded; plain text only its tail. */
const ENCODED_READ_MAX = 64 * 1024;

/**
 * The conversation of each asked-about call: its session's title and agent and the last assistant
 * text up to the call's own message, in one statement whatever the number of calls (each call one
 * index lookup: `chat_history (frame_id, ord)`), only the tail of that text read. `userId` null =
 * an admin: any session; otherwise other users' sessions are left out.
 */
@Injectable()
export class CallContextRepository {
  constructor(private readonly ds: Database) {}

  async read(
    userId: string | null,
    items: ReadonlyArray<{ session_id: string; tool_call_id?: string }>,
  ): Promise<CallContextRow[]> {
    if (items.length === 0) return [];
    return queryRows<CallContextRow>(
      this.ds,
      `SELECT q.session_id, q.tool_call_id, s.user_id, s.title, s.agent_id, said.content AS said
         FROM unnest($1::uuid[], $2::uuid[]) AS q(session_id, tool_call_id)
         JOIN sessions s ON s.id = q.session_id AND ($3::uuid IS NULL OR s.user_id = $3)
         LEFT JOIN tool_calls tc ON tc.id = q.tool_call_id AND tc.session_id = q.session_id
         LEFT JOIN chat_history m ON m.id = tc.message_id
         LEFT JOIN LATERAL (
           SELECT CASE WHEN starts_with(h.content, $4) THEN left(h.content, $5) ELSE right(h.content, $6) END AS content
             FROM chat_history h
            WHERE h.frame_id = m.frame_id AND h.ord <= m.ord AND h.role = 'assistant' AND h.status = 'ok'
              AND btrim(h.content) <> ''
            ORDER BY h.ord DESC
            LIMIT 1
         ) said ON true`,
      [
        items.map((i) => i.session_id),
        items.map((i) => i.tool_call_id ?? null),
        userId,
        PG_TEXT_MARK,
        ENCODED_READ_MAX,
        // one more than shown: a text longer than the excerpt is marked as cut
        CONTEXT_EXCERPT_MAX + 1,
      ],
    );
  }
}

/**
 * The end of what the agent said (`said`, as stored), at most `CONTEXT_EXCERPT_MAX` characters
 * (code points, never half a pair), `…` first when cut; undefined when it said nothing.
 */
export function excerptOf(said: string | null): string | undefined {
  if (said === null) return undefined;
  const text = fromPgText(said).trim();
  if (!text) return undefined;
  const chars = [...text];
  if (chars.length <= CONTEXT_EXCERPT_MAX) return text;
  return `…${chars
    .slice(chars.length - (CONTEXT_EXCERPT_MAX - 1))
    .join('')
    .trimStart()}`;
}
