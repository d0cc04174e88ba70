import { deepToPgText, preparedRows, queryRows, toPgText } from '@skald/persistence';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Attachment, Delivery } from '@skald/contracts';
import { Lease, leaseTake } from '../lease/lease.repository';
import { turnStartParts } from '../store/turn-start';

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

/**
 * The submit's one statement (see `InboxRepository.submitToActive`), prepared once per connection.
 */
export const SUBMIT_NAME = 'skald_submit_v2';

const START = turnStartParts({
  ses: 'ss',
  sid: '(SELECT id FROM ss)',
  carried: '$13::uuid[]',
  // The role this statement records (its own update is not in its snapshot).
  sessionJson: `(SELECT (to_jsonb(ss) || jsonb_build_object('owner_role', $3::text))::text FROM ss WHERE (SELECT work FROM w))`,
  // The queued inbox with the row this statement inserts (not in its snapshot either), in `ord` order.
  inbox: `(SELECT COALESCE(json_agg(i ORDER BY i.ord), '[]'::json) FROM (
      SELECT q.* FROM session_inbox q WHERE q.session_id = (SELECT id FROM ss) AND q.status = 'queued'
      UNION ALL SELECT * FROM ins) i WHERE (SELECT work FROM w))::text`,
});

export const SUBMIT_SQL = `WITH s AS (
   SELECT id FROM sessions WHERE user_id = $1::uuid AND source = $2::text AND is_active
 ), role AS (
   UPDATE sessions SET owner_role = $3::text FROM s WHERE sessions.id = s.id AND sessions.owner_role <> $3::text
 ), ins AS (
   INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, attachments, delivery, is_synthetic)
   SELECT $4::uuid, s.id, $1::uuid, $5::text, $6::text, $7::jsonb, $8::text, $9::boolean FROM s
   ON CONFLICT (user_id, client_message_id) DO NOTHING
   RETURNING *
 ), ${leaseTake({
   session: '(SELECT session_id FROM ins)',
   owner: '$10::text',
   ttlMs: '$11::int',
   when: `$10::text IS NOT NULL AND EXISTS (SELECT 1 FROM ins)
      AND NOT ((SELECT session_id FROM ins) = ANY ($12::uuid[]))
      AND NOT EXISTS (SELECT 1 FROM session_leases l JOIN ins ON l.session_id = ins.session_id
                       WHERE l.owner IS NOT NULL AND l.expires_at > now())`,
 })},
 ss AS (
   SELECT s2.*, p.client AS user_pin FROM sessions s2
     LEFT JOIN llm_client_pins p ON p.user_id = s2.user_id AND p.source = s2.source
    WHERE s2.id = (SELECT session_id FROM ins) AND s2.turn_state = 'finished'),
 w AS (SELECT EXISTS (SELECT 1 FROM lease_taken, ss
    WHERE lease_taken.took_over IS NOT TRUE
      AND lease_taken.epoch = COALESCE((SELECT l.epoch FROM session_leases l WHERE l.session_id = ss.id), 0) + 1) AS work),
 ${START.ctes}
 SELECT s.id AS active_id, (ins.id IS NOT NULL) AS inserted, lease_taken.epoch, lease_taken.took_over,
        prev.id AS prev_id, prev.session_id AS prev_session_id,
        prev.rewind_kind AS prev_rewind_kind, prev.rewind_message_id AS prev_rewind_message_id,
 ${START.columns}
   FROM s
   LEFT JOIN ins ON true
   LEFT JOIN lease_taken ON true
   LEFT JOIN session_inbox prev ON ins.id IS NULL AND prev.user_id = $1::uuid AND prev.client_message_id = $5::text`;

/** The start read taken by the submit's statement: its row (TURN_START_SQL's columns) and the carried frames it did not read. */
export interface PrimedStart {
  row: Record<string, unknown>;
  carried: readonly string[];
  /** When the statement answered (`Date.now()`): the read is as old as that. */
  at: number;
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
   * owner's role recorded, the message stored idempotently on (user, client_message_id), and —
   * with `take` — the session's lease taken for `take.owner` when the message is new, the session
   * is not in `take.busy` and its lease is free or expired (`leaseTake`, as `LeaseRepository.acquire`
   * takes it). Null when (user, source) has no active session yet — nothing was written; the caller
   * creates it and stores the message the long way (`SessionsRepository.active`, `recordOwnerRole`,
   * `store`). The statement commits before it answers, so the message is durable before it is
   * acknowledged; the role, the message and the lease are written together or not at all. A
   * duplicate takes no lease and answers the first row's ids (for a regenerate, the message it
   * answers again), as `store` + `findByClientId` do.
   *
   * The take is attempted only when the statement's snapshot shows the lease free or expired: a
   * lease held by a live driver is not even locked (a steer into a running turn never waits for
   * that turn's commit). A lease released after the snapshot is therefore not taken here; the
   * caller rings the doorbell whenever `lease` is null, as before.
   *
   * When it takes the lease of a session whose turn is finished, and no driver held the lease
   * since the statement's snapshot (the lease was free there, not expired, and the epoch taken is
   * the snapshot's + 1: no lease holder wrote in between), the statement is also the turn's start
   * read (store/turn-start.ts, `start`: the session with the role it records, the queued inbox
   * with the new item, the turn's reads; the rows of `take.carried`'s frames not read), so the
   * driver's first turn needs no read of its own. Otherwise `start` is null and the driver reads.
   */
  async submitToActive(
    scope: { userId: string; source: string; role: 'user' | 'admin' },
    item: Pick<NewInboxItem, 'clientMessageId' | 'content' | 'attachments' | 'delivery' | 'isSynthetic'>,
    take: { owner: string; ttlMs: number; busy: readonly string[]; carried?: readonly string[] } | null = null,
  ): Promise<{
    messageId: string;
    sessionId: string;
    duplicate: boolean;
    lease: Lease | null;
    start?: PrimedStart | null;
  } | null> {
    const id = randomUUID();
    const rows: Array<{
      active_id: string;
      inserted: boolean;
      epoch: string | null;
      took_over: boolean | null;
      prev_id: string | null;
      prev_session_id: string | null;
      prev_rewind_kind: string | null;
      prev_rewind_message_id: string | null;
      complete: boolean | null;
    }> = await preparedRows(this.ds, SUBMIT_NAME, SUBMIT_SQL, [
      scope.userId,
      scope.source,
      scope.role,
      id,
      toPgText(item.clientMessageId),
      toPgText(item.content),
      item.attachments ? JSON.stringify(deepToPgText(item.attachments)) : null,
      item.delivery,
      item.isSynthetic,
      take?.owner ?? null,
      take?.ttlMs ?? 0,
      take?.busy ?? [],
      take?.carried ?? [],
    ]);
    const row = rows[0];
    if (!row) return null;
    if (row.inserted) {
      const sessionId = String(row.active_id);
      const lease =
        take && row.epoch !== null
          ? { sessionId, owner: take.owner, epoch: Number(row.epoch), tookOver: row.took_over === true }
          : null;
      const start = lease && row.complete === true ? { row, carried: take?.carried ?? [], at: Date.now() } : null;
      return { messageId: id, sessionId, duplicate: false, lease, start };
    }
    if (row.prev_id !== null && row.prev_session_id !== null) {
      const first = storedAs({
        id: row.prev_id,
        session_id: row.prev_session_id,
        rewind_kind: row.prev_rewind_kind,
        rewind_message_id: row.prev_rewind_message_id,
      });
      return { ...first, duplicate: true, lease: null };
    }
    // The conflicting row was committed after this statement's snapshot (a concurrent retry of the
    // same message): read it now, as `store` does after a conflict.
    const first = await this.findByClientId({ userId: scope.userId, clientMessageId: item.clientMessageId });
    if (!first) throw new Error('inbox row vanished after a conflict');
    return { ...first, duplicate: true, lease: null };
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
