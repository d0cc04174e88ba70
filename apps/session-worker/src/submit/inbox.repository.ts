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
    const row = rows[0];
    if (!row) return null;
    const messageId = row.rewind_kind === 'regenerate' && row.rewind_message_id ? row.rewind_message_id : row.id;
    return { messageId, sessionId: row.session_id };
  }
}
