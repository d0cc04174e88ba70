import { deepToPgText, preparedRows, queryRows, toPgText, type SessionInboxRow } from '@skald/persistence';
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { inboxMessageAt, userMessageEvent, type FrameRow, type NewMessage } from '@skald/agent-loop';
import { Attachment, Delivery, USER_CAPS, userCapReached } from '@skald/contracts';
import { hopMark, hopTraceOn, RemoteError, sqlState } from '@skald/messaging';
import {
  CHAT_HISTORY_INSERT,
  insertColumns,
  SESSION_EVENTS_INSERT,
  STACK_FRAMES_INSERT,
} from '../sessions/insert-columns.constants';
import { USER_LIMITS, type UserLimits } from '../sessions/sessions.repository';
import { Lease, leaseTake } from '../lease/lease.repository';
import type { CommittedEvent } from '../store/committed-event';
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
export const SUBMIT_NAME = 'skald_submit_v6';

const START = turnStartParts({
  ses: 'ss',
  sid: '(SELECT id FROM ss)',
  carried: '$13::uuid[]',
  // The session as this statement leaves it: the role it records, and the turn it starts when it
  // enters the message (its own updates are not in its snapshot).
  sessionJson: `(SELECT (to_jsonb(ss) || jsonb_build_object('owner_role', $3::text)
      || COALESCE((SELECT jsonb_build_object('turn_state', 'running', 'turn_id', fc.id) FROM fc), '{}'::jsonb))::text
      FROM ss WHERE (SELECT work FROM w))`,
  // The queued inbox with the row this statement inserts if it stays queued (not in its snapshot either), in `ord` order.
  inbox: `(SELECT COALESCE(json_agg(i ORDER BY i.ord), '[]'::json) FROM (
      SELECT q.* FROM session_inbox q WHERE q.session_id = (SELECT id FROM ss) AND q.status = 'queued'
      UNION ALL SELECT * FROM ins WHERE ins.status = 'queued') i WHERE (SELECT work FROM w))::text`,
});

/**
 * `first`: whether this statement also makes the turn's first commit (see `submitToActive`). Each
 * condition rules out a rule of `runTurn`'s first commit the statement does not reproduce:
 * - `work`: the lease is taken here, was free in the snapshot and no holder wrote since (epoch + 1),
 *   and the turn is finished: nothing to recover, and the snapshot is the state the commit would see;
 * - a caller asks for it (`$14`, the root frame's id if one must be opened), not while draining
 *   and not for a synthetic message (not echoed: the loop enters it);
 * - not an `interrupt` (its stop follows the store) and no /stop recorded (the driver clears it first);
 * - nothing queued in the session: the new message is the item `nextTurnItem` picks, and the only one;
 * - no orphans: the root frame's last live row (status ok) is the model's, or there is none, so no
 *   row is marked failed. A chat message is stored with no rewind and no tool result.
 * And (CTE `slot`, judged only when all of these hold) one of the user's turn slots is free
 * (`SKALD_MAX_CONCURRENT_TURNS_PER_USER`, `$18`): else the message is stored queued — accepted,
 * acked — and starts when a turn of the user ends (turns/turn-slots.ts).
 */
const FIRST = `(SELECT work FROM w) AND $14::uuid IS NOT NULL AND $8::text <> 'interrupt'
     AND COALESCE((SELECT stop_requested_at IS NULL FROM ss), false)
     AND NOT EXISTS (SELECT 1 FROM session_inbox q WHERE q.session_id = (SELECT id FROM s) AND q.status = 'queued')
     AND NOT EXISTS (SELECT 1 FROM r, chat_history m
          WHERE m.frame_id = r.id AND m.status = 'ok' AND m.role <> 'assistant'
            AND m.ord > COALESCE((SELECT max(a.ord) FROM chat_history a
                                   WHERE a.frame_id = r.id AND a.status = 'ok' AND a.role = 'assistant'), -1))`;

/**
 * Sets the statement's cap on the user's queued inbox messages (`USER_CAPS.queued_messages`): the
 * row trigger on `session_inbox` (migration 1764460805400) counts them in `user_inbox_queued`,
 * exactly under concurrency, and refuses a `queued` insert past this cap with SQLSTATE `SK429`
 * (nothing the statement wrote is kept). Always true: a condition of the insert's SELECT, so it is
 * evaluated before the row is inserted.
 */
const QUEUED_CAP = (param: string) => `set_config('skald.queued_cap', ${param}::int::text, true) IS NOT NULL`;

/** SQLSTATE of the inbox trigger's refusal (its detail: how many the user has queued). */
const QUEUED_CAP_STATE = 'SK429';

export const SUBMIT_SQL = `WITH s AS (
   SELECT id FROM sessions WHERE user_id = $1::uuid AND source = $2::text AND is_active
 ), ${leaseTake({
   session: '(SELECT id FROM s)',
   owner: '$10::text',
   ttlMs: '$11::int',
   when: `$10::text IS NOT NULL AND EXISTS (SELECT 1 FROM s)
      AND NOT EXISTS (SELECT 1 FROM session_inbox d WHERE d.user_id = $1::uuid AND d.client_message_id = $5::text)
      AND NOT ((SELECT id FROM s) = ANY ($12::uuid[]))
      AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = (SELECT id FROM s)
                       AND l.owner IS NOT NULL AND l.expires_at > now())`,
 })},
 ss AS (
   SELECT s2.*, p.client AS user_pin FROM sessions s2
     LEFT JOIN llm_client_pins p ON p.user_id = s2.user_id AND p.source = s2.source
    WHERE s2.id = (SELECT id FROM s) AND s2.turn_state = 'finished' AND EXISTS (SELECT 1 FROM lease_taken)),
 w AS (SELECT EXISTS (SELECT 1 FROM lease_taken, ss
    WHERE lease_taken.took_over IS NOT TRUE
      AND lease_taken.epoch = COALESCE((SELECT l.epoch FROM session_leases l WHERE l.session_id = ss.id), 0) + 1) AS work),
 r AS (SELECT * FROM stack_frames WHERE session_id = (SELECT id FROM s) AND status = 'active' AND depth = 0
        ORDER BY ord LIMIT 1),
 pre AS (SELECT ${FIRST} AS ok),
 -- The per-user cap on running turns (migration 1764460805500): only when the statement would
 -- start the turn, the user's counter row is locked and judged in its latest version (a concurrent
 -- start committed after this snapshot is seen); no slot, and the message is stored queued, to
 -- start when a turn of the user ends (the trigger on sessions counts the turn this one starts).
 slot AS (
   INSERT INTO user_turns_running AS c (user_id, running) SELECT $1::uuid, 0 WHERE (SELECT ok FROM pre)
   ON CONFLICT (user_id) DO UPDATE SET running = c.running WHERE c.running < $18::int
   RETURNING 1),
 first AS (SELECT (SELECT ok FROM pre) AND EXISTS (SELECT 1 FROM slot) AS ok),
 ins AS (
   INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, attachments, delivery, is_synthetic,
                              status, settled_at)
   SELECT $4::uuid, s.id, $1::uuid, $5::text, $6::text, $7::jsonb, $8::text, $9::boolean,
          CASE WHEN (SELECT ok FROM first) THEN 'entered' ELSE 'queued' END,
          CASE WHEN (SELECT ok FROM first) THEN now() END
     -- Joined (not only read through \`first\`, which a plan may fold away) so that the lease row is
     -- always locked before the inbox row: one lock order for every submit, whatever its plan.
     FROM s LEFT JOIN lease_taken ON true
    -- The per-user cap on queued messages, for the inbox trigger that counts them (QUEUED_CAP).
    WHERE ${QUEUED_CAP('$17')}
   ON CONFLICT (user_id, client_message_id) DO NOTHING
   RETURNING *
 ),
 fc AS (SELECT ins.*, lease_taken.epoch AS lease_epoch FROM ins, lease_taken WHERE ins.status = 'entered'),
 root_opened AS (
   INSERT INTO stack_frames ${insertColumns(STACK_FRAMES_INSERT)}
   SELECT $14::uuid, fc.session_id, NULL, NULL, ss.agent_id, 0, 'active', NULL, fc.lease_epoch
     FROM fc, ss WHERE NOT EXISTS (SELECT 1 FROM r)
   RETURNING id),
 entered AS (
   INSERT INTO chat_history ${insertColumns(CHAT_HISTORY_INSERT)}
   SELECT fc.id, fc.session_id, COALESCE((SELECT id FROM r), $14::uuid), 'user', fc.content, NULL, fc.is_synthetic, 'ok',
          CASE WHEN fc.attachments IS NULL THEN NULL ELSE jsonb_build_object('attachments', fc.attachments) END,
          fc.client_message_id, NULL, NULL, fc.lease_epoch, $15::timestamptz, NULL, false, NULL, NULL
     FROM fc),
 head AS (
   UPDATE sessions SET owner_role = $3::text,
          last_seq = CASE WHEN fc.id IS NULL THEN sessions.last_seq ELSE sessions.last_seq + 1 END,
          turn_state = CASE WHEN fc.id IS NULL THEN sessions.turn_state ELSE 'running' END,
          turn_id = COALESCE(fc.id, sessions.turn_id),
          turn_seq = CASE WHEN fc.id IS NULL THEN sessions.turn_seq ELSE sessions.last_seq END,
          updated_at = CASE WHEN fc.id IS NULL THEN sessions.updated_at ELSE now() END
     FROM s LEFT JOIN fc ON true
    WHERE sessions.id = s.id AND (sessions.owner_role <> $3::text OR fc.id IS NOT NULL)
   RETURNING sessions.last_seq, fc.id IS NOT NULL AS first),
 echo AS (
   INSERT INTO session_events ${insertColumns(SESSION_EVENTS_INSERT)}
   SELECT fc.session_id, head.last_seq, 'user_message', $16::text FROM head, fc WHERE head.first),
 ${START.ctes}
 SELECT s.id AS active_id, (ins.id IS NOT NULL) AS inserted, lease_taken.epoch, lease_taken.took_over,
        prev.id AS prev_id, prev.session_id AS prev_session_id,
        prev.rewind_kind AS prev_rewind_kind, prev.rewind_message_id AS prev_rewind_message_id,
        (SELECT COALESCE((SELECT id FROM r), $14::uuid) FROM fc) AS first_frame_id,
        EXISTS (SELECT 1 FROM root_opened) AS first_frame_opened,
        (SELECT ss.agent_id FROM ss, fc) AS first_agent_id,
        (SELECT last_seq FROM head WHERE first) AS first_seq,
 ${START.columns}
   FROM s
   LEFT JOIN ins ON true
   LEFT JOIN lease_taken ON true
   LEFT JOIN session_inbox prev ON ins.id IS NULL AND prev.user_id = $1::uuid AND prev.client_message_id = $5::text`;

/** The turn's first commit made by the submit's statement: the message entered, as the loop's commit would have written it. */
export interface EnteredFirst {
  /** The root frame the message entered (opened by the statement when `opened`). */
  frame: FrameRow;
  opened: boolean;
  message: NewMessage;
  /** The echo, with the seq the statement gave it. */
  event: CommittedEvent;
}

/** The start read taken by the submit's statement: its row (TURN_START_SQL's columns) and the carried frames it did not read. */
export interface PrimedStart {
  row: Record<string, unknown>;
  carried: readonly string[];
  /** When the statement answered (`Date.now()`): the read is as old as that. */
  at: number;
  /** The statement also made the turn's first commit (then the driver starts the turn from it). */
  entered?: EnteredFirst | null;
  /** Its echo was already announced (TurnDriver.announceEntered): the driver does not announce it again. */
  announced?: boolean;
}

/** One row of the submit's statement. */
type SubmitRow = Record<string, unknown> & {
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
    private readonly ds: DataSource,
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
   * read (store/turn-start.ts, `start`: the session with the role it records, the queued inbox
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
    scope: { userId: string; source: string; role: 'user' | 'admin' },
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

/** What the submit's statement entered, as the loop's commit would have had it (see `EnteredFirst`). */
function enteredFirst(p: {
  userId: string;
  sessionId: string;
  agentId: string;
  frameId: string;
  opened: boolean;
  message: NewMessage;
  echo: ReturnType<typeof userMessageEvent>;
  seq: number;
}): EnteredFirst {
  const { sessionId, frameId } = p;
  return {
    frame: {
      id: frameId,
      sessionId,
      parentFrameId: null,
      parentToolCallId: null,
      agentId: p.agentId,
      depth: 0,
      status: 'active',
      clientPin: null,
    },
    opened: p.opened,
    message: { ...p.message, sessionId, frameId },
    event: { userId: p.userId, sessionId, seq: p.seq, event: p.echo },
  };
}

/**
 * A JSON value with every object's keys in the order jsonb keeps them (shorter first, then by
 * their UTF-8 bytes): what a jsonb column gives back for it.
 */
export function jsonbOrdered(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(jsonbOrdered);
  if (v === null || typeof v !== 'object') return v;
  const keys = Object.keys(v).sort((a, b) => {
    const la = Buffer.byteLength(a);
    const lb = Buffer.byteLength(b);
    return la !== lb ? la - lb : Buffer.compare(Buffer.from(a), Buffer.from(b));
  });
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    const x = (v as Record<string, unknown>)[k];
    if (x !== undefined) out[k] = jsonbOrdered(x);
  }
  return out;
}

/** Hop trace: marks when the pool hands a client out and when a client's socket has data (once per pool). */
const tracedPools = new WeakSet<object>();
function tracePool(ds: DataSource): void {
  const pool = (ds.driver as unknown as { master?: { on(ev: 'acquire', fn: (c: unknown) => void): void } }).master;
  if (!pool || tracedPools.has(pool)) return;
  tracedPools.add(pool);
  const streams = new WeakSet<object>();
  pool.on('acquire', (client) => {
    hopMark('pg.acquire');
    const stream = (client as { connection?: { stream?: { on(ev: 'data', fn: (b: Buffer) => void): void } } })
      .connection?.stream;
    if (!stream || streams.has(stream)) return;
    streams.add(stream);
    stream.on('data', (b) => hopMark('pg.read', b.length));
  });
}
