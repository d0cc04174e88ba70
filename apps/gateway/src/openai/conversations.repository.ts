import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { fromPgText, toPgText } from '@skald/persistence/pg-text';
import { queryRows } from '@skald/persistence/query-rows';
import type { OpenaiConversationsRow } from '@skald/persistence';

/** A message as a conversation stores and matches it (`canonicalMessages`). */
export interface StoredMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/**
 * The SHA-256 of a message list, with its model: two lists match when they are the same messages,
 * role and text, in the same order. JSON of `[model, [[role, content], …]]` leaves no two lists
 * the same text.
 */
export function digestOf(model: string, messages: readonly StoredMessage[]): string {
  const text = JSON.stringify([model, messages.map((m) => [m.role, m.content])]);
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Whether a stored list (as read back from jsonb) is exactly `messages`. */
function sameMessages(stored: unknown, messages: readonly StoredMessage[]): boolean {
  if (!Array.isArray(stored) || stored.length !== messages.length) return false;
  return messages.every((m, i) => {
    const s = stored[i] as { role?: unknown; content?: unknown } | null;
    return s?.role === m.role && typeof s.content === 'string' && fromPgText(s.content) === m.content;
  });
}

/**
 * Conversations of the OpenAI-compatible endpoint (`openai_conversations`, the gateway's table):
 * which API token opened each, and the exact message list its client holds. Every method takes the
 * user, so an unscoped query does not compile.
 */
@Injectable()
export class OpenAiConversationsRepository {
  constructor(private readonly ds: Database) {}

  /**
   * The conversation this token opened whose stored list is exactly `messages` under `model` (the
   * latest when several are), or null. Never a guess: no prefix, no similarity, no other token's.
   */
  async matching(scope: { userId: string; apiTokenId: string }, model: string, messages: readonly StoredMessage[]) {
    const rows = await queryRows<Pick<OpenaiConversationsRow, 'session_id' | 'messages'>>(
      this.ds,
      `SELECT session_id, messages FROM openai_conversations
        WHERE user_id = $1 AND api_token_id = $2 AND digest = $3 AND model = $4
        ORDER BY updated_at DESC LIMIT 5`,
      [scope.userId, scope.apiTokenId, digestOf(model, messages), model],
    );
    // The digest finds it; the stored list itself decides (a digest alone is never the proof).
    return rows.find((r) => sameMessages(r.messages, messages))?.session_id ?? null;
  }

  /**
   * Records the list the client holds for the conversation (opened by `apiTokenId` when it is new
   * here; a conversation of another user is never touched).
   */
  async record(
    scope: { userId: string; apiTokenId: string | null },
    sessionId: string,
    model: string,
    messages: readonly StoredMessage[],
  ): Promise<void> {
    const stored = messages.map((m) => ({ role: m.role, content: toPgText(m.content) }));
    await this.ds.query(
      `INSERT INTO openai_conversations (session_id, user_id, api_token_id, model, messages, digest)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6)
       ON CONFLICT (session_id) DO UPDATE SET messages = EXCLUDED.messages, digest = EXCLUDED.digest,
              model = EXCLUDED.model, updated_at = now()
        WHERE openai_conversations.user_id = EXCLUDED.user_id`,
      [sessionId, scope.userId, scope.apiTokenId, model, JSON.stringify(stored), digestOf(model, messages)],
    );
  }
}
