import { deepToPgText, queryRows, toPgText } from '@skald/persistence';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Attachment, Delivery } from '@skald/contracts';

export interface NewInboxItem {
  userId: string;
  sessionId: string;
  clientMessageId: string;
  content: string;
  attachments?: Attachment[];
  delivery: Delivery;
  isSynthetic: boolean;
  /** A regenerate or an edit-and-resend, carried out when the item starts its turn. */
  rewind?: { kind: 'regenerate' | 'edit'; messageId: string };
}

/** The durable session inbox: a message is acknowledged only once its row is committed here. */
@Injectable()
export class InboxRepository {
  constructor(private readonly ds: DataSource) {}

  /**
   * Stores the message, idempotent on (user, client_message_id): a repeat returns the first row's
   * ids with `duplicate: true` and changes nothing.
   */
  async store(item: NewInboxItem): Promise<{ messageId: string; sessionId: string; duplicate: boolean }> {
    const id = randomUUID();
    const inserted: Array<{ id: string }> = await queryRows(
      this.ds,
      `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, attachments, delivery, is_synthetic,
                                  rewind_kind, rewind_message_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (user_id, client_message_id) DO NOTHING
       RETURNING id`,
      [
        id,
        item.sessionId,
        item.userId,
        toPgText(item.clientMessageId),
        toPgText(item.content),
        item.attachments ? JSON.stringify(deepToPgText(item.attachments)) : null,
        item.delivery,
        item.isSynthetic,
        item.rewind?.kind ?? null,
        item.rewind?.messageId ?? null,
      ],
    );
    if (inserted.length > 0) return { messageId: id, sessionId: item.sessionId, duplicate: false };
    const row = await this.findByClientId({ userId: item.userId, clientMessageId: item.clientMessageId });
    if (!row) throw new Error('inbox row vanished after a conflict');
    return { ...row, duplicate: true };
  }

  /**
   * A chat message into the active session of (user, source), in one statement: the active
   * session found by the caller's user id (so another user's session cannot be named), its
   * owner's role recorded, the message stored idempotently on (user, client_message_id). Null when
   * (user, source) has no active session yet — nothing was written; the caller creates it and
   * stores the message the long way (`SessionsRepository.active`, `recordOwnerRole`, `store`).
   * The statement commits before it answers, so the message is durable before it is acknowledged;
   * the role and the message are written together or not at all. A duplicate answers the first
   * row's ids (for a regenerate, the message it answers again), as `store` + `findByClientId` do.
   */
  async submitToActive(
    scope: { userId: string; source: string; role: 'user' | 'admin' },
    item: Pick<NewInboxItem, 'clientMessageId' | 'content' | 'attachments' | 'delivery' | 'isSynthetic'>,
  ): Promise<{ messageId: string; sessionId: string; duplicate: boolean } | null> {
    const id = randomUUID();
    const rows: Array<{
      active_id: string;
      inserted: boolean;
      prev_id: string | null;
      prev_session_id: string | null;
      prev_rewind_kind: string | null;
      prev_rewind_message_id: string | null;
    }> = await queryRows(
      this.ds,
      `WITH s AS (
         SELECT id FROM sessions WHERE user_id = $1::uuid AND source = $2::text AND is_active
       ), role AS (
         UPDATE sessions SET owner_role = $3::text FROM s WHERE sessions.id = s.id AND sessions.owner_role <> $3::text
       ), ins AS (
         INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, attachments, delivery, is_synthetic)
         SELECT $4::uuid, s.id, $1::uuid, $5::text, $6::text, $7::jsonb, $8::text, $9::boolean FROM s
         ON CONFLICT (user_id, client_message_id) DO NOTHING
         RETURNING id
       )
       SELECT s.id AS active_id, (ins.id IS NOT NULL) AS inserted,
              prev.id AS prev_id, prev.session_id AS prev_session_id,
              prev.rewind_kind AS prev_rewind_kind, prev.rewind_message_id AS prev_rewind_message_id
         FROM s
         LEFT JOIN ins ON true
         LEFT JOIN session_inbox prev ON ins.id IS NULL AND prev.user_id = $1::uuid AND prev.client_message_id = $5::text`,
      [
        scope.userId,
        scope.source,
        scope.role,
        id,
        toPgText(item.clientMessageId),
        toPgText(item.content),
        item.attachments ? JSON.stringify(deepToPgText(item.attachments)) : null,
        item.delivery,
        item.isSynthetic,
      ],
    );
    const row = rows[0];
    if (!row) return null;
    if (row.inserted) return { messageId: id, sessionId: String(row.active_id), duplicate: false };
    if (row.prev_id !== null && row.prev_session_id !== null) {
      const first = storedAs({
        id: row.prev_id,
        session_id: row.prev_session_id,
        rewind_kind: row.prev_rewind_kind,
        rewind_message_id: row.prev_rewind_message_id,
      });
      return { ...first, duplicate: true };
    }
    // The conflicting row was committed after this statement's snapshot (a concurrent retry of the
    // same message): read it now, as `store` does after a conflict.
    const first = await this.findByClientId({ userId: scope.userId, clientMessageId: item.clientMessageId });
    if (!first) throw new Error('inbox row vanished after a conflict');
    return { ...first, duplicate: true };
  }

  /**
   * The row a client id was stored as (any session of the user), if any; for a regenerate, the
   * message it answers again (its own id never names a row).
   */
  async findByClientId(scope: {
    userId: string;
    clientMessageId: string;
  }): Promise<{ messageId: string; sessionId: string } | null> {
    const rows: Array<{
      id: string;
      session_id: string;
      rewind_kind: string | null;
      rewind_message_id: string | null;
    }> = await queryRows(
      this.ds,
      `SELECT id, session_id, rewind_kind, rewind_message_id FROM session_inbox WHERE user_id = $1 AND client_message_id = $2`,
      [scope.userId, toPgText(scope.clientMessageId)],
    );
    return rows[0] ? storedAs(rows[0]) : null;
  }
}

/** What a stored inbox row answers a client: its ids; for a regenerate, the message it answers again. */
function storedAs(row: {
  id: string;
  session_id: string;
  rewind_kind: string | null;
  rewind_message_id: string | null;
}): { messageId: string; sessionId: string } {
  const messageId = row.rewind_kind === 'regenerate' && row.rewind_message_id ? row.rewind_message_id : row.id;
  return { messageId, sessionId: row.session_id };
}
