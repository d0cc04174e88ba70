import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { queryRows } from '@skald/persistence/query-rows';
import type { OpenaiRequestsRow } from '@skald/persistence';
import type { StoredMessage } from './conversations.repository';

/** How long a request can be retried: a retry after this opens a new turn. */
export const RETRY_WINDOW_HOURS = 24;

/** What a request is, for its retries: its model, the conversation it names, its messages. */
export interface RequestFacts {
  apiTokenId: string | null;
  model: string;
  /** The conversation named by header or `metadata`, or null. */
  named: string | null;
  messages: readonly StoredMessage[];
}

const sha256 = (parts: unknown[]): string => createHash('sha256').update(JSON.stringify(parts), 'utf8').digest('hex');

/** The request's own digest: the same model, named conversation and messages (role and text, in order). */
export function requestDigest(r: RequestFacts): string {
  return sha256(['request', r.model, r.named, r.messages.map((m) => [m.role, m.content])]);
}

/**
 * The key a request's retries share: its `Idempotency-Key` (per API token) when it sends one, else
 * the request itself (per API token: model, named conversation, messages). JSON of the parts leaves
 * no two different requests the same text.
 */
export function requestKey(r: RequestFacts, idempotencyKey: string | undefined): string {
  return idempotencyKey !== undefined
    ? sha256(['key', r.apiTokenId, idempotencyKey])
    : sha256(['request', r.apiTokenId, requestDigest(r)]);
}

/** Where a request's message went: a retry submits the same message id there and reads after the same seq. */
export interface TakenRequest {
  sessionId: string;
  clientMessageId: string;
  afterSeq: number;
  digest: string;
}

/**
 * The requests of the OpenAI-compatible endpoint a retry attaches to (`openai_requests`, the
 * gateway's table): the latest request under each key, for a day. Every method takes the user.
 */
@Injectable()
export class OpenAiRequestsRepository {
  constructor(private readonly ds: Database) {}

  /** The latest request of the user under `key` within the retry window, or null. */
  async find(userId: string, key: string): Promise<TakenRequest | null> {
    const rows = await queryRows<
      Pick<OpenaiRequestsRow, 'session_id' | 'client_message_id' | 'after_seq' | 'request_digest'>
    >(
      this.ds,
      `SELECT session_id, client_message_id, after_seq, request_digest FROM openai_requests
        WHERE user_id = $1 AND request_key = $2 AND created_at > now() - make_interval(hours => $3)`,
      [userId, key, RETRY_WINDOW_HOURS],
    );
    const r = rows[0];
    return r
      ? {
          sessionId: r.session_id,
          clientMessageId: r.client_message_id,
          afterSeq: Number(r.after_seq),
          digest: r.request_digest,
        }
      : null;
  }

  /**
   * Records a request before its message is submitted (a retry of it then finds it, whatever
   * happened after), replacing an earlier one under the key; the user's rows past the window go.
   */
  async take(userId: string, key: string, taken: TakenRequest): Promise<void> {
    await this.ds.query(
      `DELETE FROM openai_requests WHERE user_id = $1 AND created_at < now() - make_interval(hours => $2)`,
      [userId, RETRY_WINDOW_HOURS],
    );
    await this.ds.query(
      `INSERT INTO openai_requests (user_id, request_key, request_digest, session_id, client_message_id, after_seq)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (user_id, request_key) DO UPDATE SET request_digest = EXCLUDED.request_digest,
              session_id = EXCLUDED.session_id, client_message_id = EXCLUDED.client_message_id,
              after_seq = EXCLUDED.after_seq, created_at = now()`,
      [userId, key, taken.digest, taken.sessionId, taken.clientMessageId, taken.afterSeq],
    );
  }
}
