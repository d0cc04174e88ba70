import { deepToPgText, toPgText } from '@skald/persistence/pg-text';
import { preparedRows, queryRows } from '@skald/persistence/query-rows';
import type { SessionInboxRow } from '@skald/persistence';
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { inboxMessageAt, userMessageEvent } from '@skald/agent-loop';
import { type Role, Attachment, Delivery, USER_CAPS, userCapReached } from '@skald/contracts';
import { hopMark, hopTraceOn } from '@skald/messaging/hop-trace';
import { RemoteError } from '@skald/messaging/bus-errors';
import { sqlState } from '@skald/messaging/database-input';
import { USER_LIMITS, type UserLimits } from '../sessions/sessions.repository';
import type { Lease } from '../lease/lease.repository';
import type { TurnStartRead } from '../loop-adapters/session-store/turn-start';
import { enteredFirst, jsonbOrdered, type PrimedStart } from './entered-first';
import { tracePool } from './pool-trace';
import { QUEUED_CAP, QUEUED_CAP_STATE, SUBMIT_NAME, SUBMIT_SQL } from './submit-statement';

export interface NewInboxItem {
  userId: string;
  sessionId: string;
  clientMessageId: string;
  content: string;
  attachments?: Attachment[];
  delivery: Delivery;
  isSynthetic: boolean;
  /** A regenerate or an edit-and-resend, carried out when the item starts its turn. */
  rewind?: { kind: NonNullable<SessionInboxRow['rewind_kind']>; messageId: string };
}

/** One row of the submit's statement: its own columns, and the turn start's (TURN_START_SQL's) when it took the lease. */
type SubmitRow = TurnStartRead & {
  active_id: string;
  inserted: boolean;
  epoch: string | null;
  took_over: boolean | null;
  prev_id: string | null;
  prev_session_id: string | null;
  prev_rewind_kind: string | null;
  prev_rewind_message_id: string | null;
  first_frame_id: string | null;
  first_frame_opened: boolean;
  first_agent_id: string | null;
  first_seq: string | null;
  complete: boolean | null;
};

/** The durable session inbox: a message is acknowledged only once its row is committed here. */
@Injectable()
export class InboxRepository {
  /** `SKALD_MAX_QUEUED_MESSAGES_PER_USER`. */
  private readonly maxQueued: number;
  /** `SKALD_MAX_CONCURRENT_TURNS_PER_USER`. */
  private readonly maxTurns: number;

  constructor(
    private readonly ds: Database,
    @Optional() @Inject(USER_LIMITS) limits?: UserLimits,
  ) {
    this.maxQueued = limits?.queuedMessages ?? USER_CAPS.queued_messages.default;
    this.maxTurns = limits?.concurrentTurns ?? USER_CAPS.concurrent_turns.default;
  }

  /** The trigger's refusal as the caller's error: `rate_limited` naming the cap; any other error as it is. */
  private capped(e: unknown): unknown {
    if (sqlState(e) !== QUEUED_CAP_STATE) return e;
    const detail = (e as { driverError?: { detail?: unknown }; detail?: unknown }).driverError?.detail;
    const have = Number(detail ?? (e as { detail?: unknown }).detail);
    return new RemoteError(userCapReached('queued_messages', this.maxQueued, Number.isFinite(have) ? have : undefined));
  }

  /**
   * Stores the message, idempotent on (user, client_message_id): a repeat returns the first row's
   * ids with `duplicate: true` and changes nothing.
   */
  async store(item: NewInboxItem): Promise<{ messageId: string; sessionId: string; duplicate: boolean }> {
    const id = randomUUID();
    const inserted = await queryRows<Pick<SessionInboxRow, 'id'>>(
      this.ds,
      `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, attachments, delivery, is_synthetic,
                                  rewind_kind, rewind_message_id)
       SELECT $1::uuid, $2::uuid, $3::uuid, $4::text, $5::text, $6::jsonb, $7::text, $8::boolean, $9::text, $10::uuid
        WHERE ${QUEUED_CAP('$11')}
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
        this.maxQueued,
      ],
    ).catch((e: unknown) => {
      throw this.capped(e);
    });
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
   * acknowledged; the role, the message, the lease and the first commit below are written together
   * or not at all. A duplicate answers the first row's ids (for a regenerate, the message it answers
   * again), as `store` + `findByClientId` do, and takes no lease — except when the first row was
   * committed after this statement's snapshot (a concurrent retry): the take, judged before the
   * insert, may have happened, and that lease is returned with the duplicate (`lease`) for the caller
   * to drive with (or release).
   *
   * The take is attempted only when the statement's snapshot shows the lease free or expired: a
   * lease held by a live driver is not even locked (a steer into a running turn never waits for
   * that turn's commit). A lease released after the snapshot is therefore not taken here; the
   * caller rings the doorbell whenever `lease` is null, as before.
   *
   * When it takes the lease of a session whose turn is finished, and no driver held the lease
   * since the statement's snapshot (the lease was free there, not expired, and the epoch taken is
   * the snapshot's + 1: no lease holder wrote in between), the statement is also the turn's start
   * read (loop-adapters/session-store/turn-start.ts, `start`: the session with the role it records, the queued inbox
   * with the new item, the turn's reads; the rows of `take.carried`'s frames not read), so the
   * driver's first turn needs no read of its own. Otherwise `start` is null and the driver reads.
   *
   * With `take.enter`, in that case, when moreover the message is the only input to enter (nothing
   * else queued), not an `interrupt`, no /stop is recorded and the root frame ends with the model's
   * row (no orphan to mark failed), the statement also makes the turn's first commit — exactly
   * the rows `runTurn` would commit for it (see FIRST): the item `entered`, the root frame opened
   * if there is none (id `take.enter.frameId`), the user row (created at `take.enter.at`), the
   * session's turn `running` named by the message with `turn_seq`, and the `user_message` event
   * with the next seq. `start.entered` then says what was written: the driver announces the echo
   * and runs the turn with the loop's `entered` input.
   */
  async submitToActive(
    scope: { userId: string; source: string; role: Role },
    item: Pick<NewInboxItem, 'clientMessageId' | 'content' | 'attachments' | 'delivery' | 'isSynthetic'>,
    take: {
      owner: string;
      ttlMs: number;
      busy: readonly string[];
      carried?: readonly string[];
      enter?: { frameId: string; at: Date } | null;
    } | null = null,
  ): Promise<{
    messageId: string;
    sessionId: string;
    duplicate: boolean;
    lease: Lease | null;
    start?: PrimedStart | null;
  } | null> {
    const id = randomUUID();
    // A synthetic message is not echoed: it is entered by the loop (`inboxEntry`), not by this statement.
    const enter = item.isSynthetic ? null : (take?.enter ?? null);
    // The row and echo the loop's first commit would write for this message (read back from the
    // inbox, the attachments come in jsonb's key order).
    const attachments = item.attachments ? (jsonbOrdered(item.attachments) as Attachment[]) : null;
    const message = enter
      ? inboxMessageAt(
          '',
          enter.frameId,
          {
            id,
            sessionId: '',
            clientMessageId: item.clientMessageId,
            content: item.content,
            attachments,
            delivery: item.delivery,
            createdAt: enter.at.toISOString(),
          },
          enter.at.toISOString(),
        )
      : null;
    const echo = message ? userMessageEvent(message) : null;
    if (hopTraceOn) tracePool(this.ds);
    hopMark('sql.submit');
    const rows: SubmitRow[] = await preparedRows<SubmitRow>(this.ds, SUBMIT_NAME, SUBMIT_SQL, [
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
      enter?.frameId ?? null,
      enter ? enter.at.toISOString() : null,
      echo ? toPgText(JSON.stringify(echo)) : null,
      this.maxQueued,
      this.maxTurns,
    ]).catch((e: unknown) => {
      throw this.capped(e);
    });
    hopMark('sql.submit.done');
    const row = rows[0];
    if (!row) return null;
    const sessionId = String(row.active_id);
    const lease =
      take && row.epoch !== null
        ? { sessionId, owner: take.owner, epoch: Number(row.epoch), tookOver: row.took_over === true }
        : null;
    if (row.inserted) {
      const entered =
        message && echo && row.first_frame_id !== null && row.first_seq !== null
          ? enteredFirst({
              userId: scope.userId,
              sessionId,
              agentId: String(row.first_agent_id),
              frameId: row.first_frame_id,
              opened: row.first_frame_opened,
              message,
              echo,
              seq: Number(row.first_seq),
            })
          : null;
      const start =
        lease && row.complete === true ? { row, carried: take?.carried ?? [], at: Date.now(), entered } : null;
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
    // same message): read it now, as `store` does after a conflict. The lease may have been taken
    // (the take is judged on the snapshot, before the insert): it goes back to the caller.
    const first = await this.findByClientId({ userId: scope.userId, clientMessageId: item.clientMessageId });
    if (!first) throw new Error('inbox row vanished after a conflict');
    return { ...first, duplicate: true, lease };
  }

  /**
   * The row a client id was stored as (any session of the user), if any; for a regenerate, the
   * message it answers again (its own id never names a row).
   */
  async findByClientId(scope: {
    userId: string;
    clientMessageId: string;
  }): Promise<{ messageId: string; sessionId: string } | null> {
    const rows = await queryRows<Pick<SessionInboxRow, 'id' | 'session_id' | 'rewind_kind' | 'rewind_message_id'>>(
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
