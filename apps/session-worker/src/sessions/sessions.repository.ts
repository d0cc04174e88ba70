import { decodeRow, fromJsonText, toPgText } from '@skald/persistence/pg-text';
import { queryRows } from '@skald/persistence/query-rows';
import type {
  ChatHistoryRow,
  SessionEventsRow,
  SessionInboxRow,
  SessionsRow,
  StackFramesRow,
  ToolCallsRow,
} from '@skald/persistence';
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Optional } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Database } from '@skald/persistence/database';
import { USER_CAPS, userCapReached } from '@skald/contracts';
import { RemoteError } from '@skald/messaging/bus-errors';

/** A session as listed: with its message count and the time of its last message. */
export type SessionListRow = SessionsRow & { message_count: number; last_message_at: Date | null };
/** An inbox message a `/stop` discarded. */
export type DiscardedInboxRow = Pick<SessionInboxRow, 'id' | 'content' | 'attachments' | 'is_synthetic' | 'created_at'>;

/** Per-user caps the session worker enforces (`USER_CAPS`; from the worker's config). */
export interface UserLimits {
  sessions?: number;
  queuedMessages?: number;
  concurrentTurns?: number;
}
export const USER_LIMITS = Symbol('USER_LIMITS');

/** Sessions of one user. Every method takes the tenant, so an unscoped query does not compile. */
@Injectable()
export class SessionsRepository {
  private readonly maxSessions: number;
  /** The user's cap on concurrent turns (`USER_CAPS.concurrent_turns`). */
  readonly maxTurns: number;

  constructor(
    private readonly ds: Database,
    @Optional() @Inject(USER_LIMITS) limits?: UserLimits,
  ) {
    this.maxSessions = limits?.sessions ?? USER_CAPS.sessions.default;
    this.maxTurns = limits?.concurrentTurns ?? USER_CAPS.concurrent_turns.default;
  }

  /** The active session of (user, source), created on first use; `createNew` starts a fresh one. */
  async active(
    scope: { userId: string; source: string },
    createNew = false,
  ): Promise<{ id: string; created: boolean; previousId?: string }> {
    return this.ds.transaction(async (tx) => {
      // Serialise concurrent first-uses of one (user, source) pair.
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`${scope.userId}/${scope.source}`]);
      const rows = await queryRows<Pick<SessionsRow, 'id'>>(
        tx,
        `SELECT id FROM sessions WHERE user_id = $1 AND source = $2 AND is_active`,
        [scope.userId, scope.source],
      );
      if (rows[0] && !createNew) return { id: String(rows[0].id), created: false };
      if (rows[0])
        await tx.query(`UPDATE sessions SET is_active = false, updated_at = now() WHERE id = $1`, [rows[0].id]);
      await this.withinCap(tx, scope.userId);
      const id = randomUUID();
      // A new conversation starts with the model last chosen in its source.
      await tx.query(
        `INSERT INTO sessions (id, user_id, source, scratchpad_session_id, client_pin)
         VALUES ($1, $2, $3, $1, (SELECT client FROM llm_client_pins WHERE user_id = $2 AND source = $3))`,
        [id, scope.userId, scope.source],
      );
      return { id, created: true, previousId: rows[0] ? String(rows[0].id) : undefined };
    });
  }

  /**
   * A new conversation of the user that is not the active one of its source (`session.open`):
   * answered by `agentId`, with `systemPrompt` as its RunContext prompt parts and `history` as its
   * earlier rows — a root frame and its chat rows, written in one transaction with the session
   * (epoch 0: no lease has written yet), so a turn starts on them as on any earlier exchange.
   */
  async open(o: {
    userId: string;
    role: 'user' | 'admin';
    source: string;
    agentId: string;
    systemPrompt: readonly string[];
    history: readonly { role: 'user' | 'assistant'; content: string }[];
  }): Promise<string> {
    return this.ds.transaction(async (tx) => {
      await this.withinCap(tx, o.userId);
      const id = randomUUID();
      const runContext = o.systemPrompt.length > 0 ? { system_prompt: o.systemPrompt } : {};
      await tx.query(
        `INSERT INTO sessions (id, user_id, source, agent_id, owner_role, is_active, scratchpad_session_id, run_context)
         VALUES ($1, $2, $3, $4, $5, false, $1, $6::jsonb)`,
        [id, o.userId, o.source, o.agentId, o.role, JSON.stringify(runContext)],
      );
      if (o.history.length === 0) return id;
      const frameId = randomUUID();
      await tx.query(
        `INSERT INTO stack_frames (id, session_id, agent_id, depth, status, epoch) VALUES ($1, $2, $3, 0, 'active', 0)`,
        [frameId, id, o.agentId],
      );
      // One statement for the whole history, in order (`ord` follows the row order of the insert).
      await tx.query(
        `INSERT INTO chat_history (id, session_id, frame_id, role, content, epoch)
         SELECT gen_random_uuid(), $1, $2, h.role, h.content, 0
           FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS h(role, content, n) ORDER BY h.n`,
        [id, frameId, o.history.map((h) => h.role), o.history.map((h) => toPgText(h.content))],
      );
      return id;
    });
  }

  /**
   * The per-user cap on conversations: counted under the user's lock in the caller's transaction,
   * so parallel creations (of any source) cannot pass it together. Job sessions are not counted.
   */
  private async withinCap(tx: EntityManager, userId: string): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`session-cap/${userId}`]);
    const [count] = await queryRows<{ n: string }>(
      tx,
      `SELECT count(*) AS n FROM sessions WHERE user_id = $1 AND is_interactive`,
      [userId],
    );
    const have = Number(count?.n ?? 0);
    if (have >= this.maxSessions) throw new RemoteError(userCapReached('sessions', this.maxSessions, have));
  }

  async find(scope: { userId: string; sessionId: string }): Promise<SessionsRow | null> {
    const rows = await queryRows<SessionsRow>(this.ds, `SELECT * FROM sessions WHERE id = $1 AND user_id = $2`, [
      scope.sessionId,
      scope.userId,
    ]);
    return rows[0] ?? null;
  }

  /**
   * Whether the session's queued input waits for one of the user's turn slots: its turn finished,
   * input queued, no slot held, and the user holding `maxTurns` or more (the counter the
   * reservations judge by).
   */
  async heldBackByTurnCap(scope: { userId: string; sessionId: string }): Promise<boolean> {
    const rows = await queryRows<{ held: boolean }>(
      this.ds,
      `SELECT EXISTS (
         SELECT 1 FROM sessions s
          WHERE s.id = $1 AND s.user_id = $2 AND s.turn_state = 'finished' AND NOT s.holds_turn_slot
            AND EXISTS (SELECT 1 FROM session_inbox i WHERE i.session_id = s.id AND i.status = 'queued')
            AND COALESCE((SELECT c.running FROM user_turns_running c WHERE c.user_id = s.user_id), 0) >= $3::int
       ) AS held`,
      [scope.sessionId, scope.userId, this.maxTurns],
    );
    return rows[0]?.held === true;
  }

  async list(scope: {
    userId: string;
    source?: string;
    page: number;
    perPage: number;
  }): Promise<{ items: SessionListRow[]; total: number }> {
    const params: unknown[] = [scope.userId];
    let where = `s.user_id = $1`;
    if (scope.source) {
      params.push(scope.source);
      where += ` AND s.source = $2`;
    }
    const total = await queryRows<{ n: number }>(
      this.ds,
      `SELECT count(*)::int AS n FROM sessions s WHERE ${where}`,
      params,
    );
    const items = await queryRows<SessionListRow>(
      this.ds,
      `SELECT s.*, COALESCE(h.n, 0)::int AS message_count, h.last_at AS last_message_at
         FROM sessions s
         LEFT JOIN LATERAL (SELECT count(*) AS n, max(created_at) AS last_at FROM chat_history WHERE session_id = s.id) h ON true
        WHERE ${where}
        ORDER BY s.created_at DESC, s.id
        LIMIT ${scope.perPage} OFFSET ${(scope.page - 1) * scope.perPage}`,
      params,
    );
    return { items, total: Number(total[0]?.n ?? 0) };
  }

  /**
   * Any user's session as listed, for an admin's read: the one read not scoped by a tenant, so its
   * scope is the admin's role (a caller that has not checked the actor's role does not compile).
   */
  async findForAdmin(scope: { role: 'admin'; sessionId: string }): Promise<SessionListRow | null> {
    const rows = await queryRows<SessionListRow>(
      this.ds,
      `SELECT s.*, COALESCE(h.n, 0)::int AS message_count, h.last_at AS last_message_at
         FROM sessions s
         LEFT JOIN LATERAL (SELECT count(*) AS n, max(created_at) AS last_at FROM chat_history WHERE session_id = s.id) h ON true
        WHERE s.id = $1`,
      [scope.sessionId],
    );
    return rows[0] ?? null;
  }

  /** Remembers the LLM client chosen in a conversation (null: AUTO). */
  async rememberClient(scope: { userId: string; sessionId: string }, client: string | null): Promise<void> {
    await this.ds.query(`UPDATE sessions SET client_pin = $3 WHERE id = $1 AND user_id = $2`, [
      scope.sessionId,
      scope.userId,
      client,
    ]);
  }

  /** Parked turns without a driver, least recently touched first: their answers may have lost a doorbell. */
  /**
   * A page of parked sessions nobody drives, in id order after `after` (keyset paging: the sweep
   * walks every parked turn, a page a sweep, then starts over).
   */
  async parked(limit: number, after: string = FIRST_ID): Promise<string[]> {
    const rows = await queryRows<Pick<SessionsRow, 'id'>>(
      this.ds,
      `SELECT s.id FROM sessions s LEFT JOIN session_leases l ON l.session_id = s.id
        WHERE s.turn_state = 'parked' AND (l.session_id IS NULL OR l.owner IS NULL OR l.expires_at <= now())
          AND s.id > $2::uuid
        ORDER BY s.id LIMIT $1`,
      [limit, after],
    );
    return rows.map((r) => r.id);
  }

  /** Running turns whose lease expired more than `graceMs` ago: nobody recovered them. */
  /** Inbox items stored and not yet taken into a conversation (the partial index makes this cheap). */
  async inboxPending(): Promise<number> {
    const [row] = await queryRows<{ n: number }>(
      this.ds,
      `SELECT count(*)::int AS n FROM session_inbox WHERE status = 'queued'`,
    );
    return row?.n ?? 0;
  }

  async stuck(graceMs: number): Promise<string[]> {
    const rows = await queryRows<Pick<SessionsRow, 'id'>>(
      this.ds,
      `SELECT s.id FROM sessions s JOIN session_leases l ON l.session_id = s.id
        WHERE s.turn_state = 'running' AND l.expires_at < now() - $1 * interval '1 millisecond'`,
      [graceMs],
    );
    return rows.map((r) => r.id);
  }

  /**
   * A page of the root conversation of the (user, source) active session, newest page first but
   * returned oldest first; synthetic rows excluded (messages whose turn was stopped are kept), and
   * what /clear closed.
   */
  /**
   * One page of the chat history and, read in the same snapshot (REPEATABLE READ), the seq a
   * client resumes its socket after: the session's `last_seq` when its turn is finished, else the
   * seq before the unfinished turn began (`turn_seq`; 0 when unknown) — so the page and the events
   * replayed after it never miss a change, and what they both carry (the running turn's rows) the
   * client folds in by id.
   */
  async chatPage(scope: {
    userId: string;
    sessionId: string;
    before?: string;
    limit: number;
  }): Promise<{ rows: ChatHistoryRow[]; calls: ToolCallsRow[]; hasMore: boolean; resumeSeq: number }> {
    return this.ds.transaction('REPEATABLE READ', async (tx) => {
      const head = await queryRows<Pick<SessionsRow, 'last_seq' | 'turn_state' | 'turn_seq'>>(
        tx,
        `SELECT last_seq, turn_state, turn_seq FROM sessions WHERE id = $1`,
        [scope.sessionId],
      );
      const s = head[0];
      const resumeSeq = !s
        ? 0
        : s.turn_state === 'finished'
          ? Number(s.last_seq)
          : s.turn_seq === null || s.turn_seq === undefined
            ? 0
            : Number(s.turn_seq);
      const params: unknown[] = [scope.sessionId, scope.limit + 1];
      let before = '';
      if (scope.before) {
        params.push(scope.before);
        before = `AND h.ord < (SELECT ord FROM chat_history WHERE id = $3 AND session_id = $1)`;
      }
      const rows = await queryRows<ChatHistoryRow>(
        tx,
        `SELECT h.* FROM chat_history h JOIN stack_frames f ON f.id = h.frame_id
          WHERE h.session_id = $1 AND f.depth = 0 AND f.status = 'active' AND NOT h.is_synthetic AND h.status <> 'superseded' ${before}
          ORDER BY h.ord DESC LIMIT $2`,
        params,
      );
      const hasMore = rows.length > scope.limit;
      const page = rows.slice(0, scope.limit).reverse().map(decodeRow);
      const ids = page.filter((r) => r.role === 'assistant').map((r) => String(r.id));
      const calls =
        ids.length === 0
          ? []
          : await queryRows<ToolCallsRow>(
              tx,
              `SELECT * FROM tool_calls WHERE message_id = ANY($1::uuid[]) ORDER BY ord`,
              [ids],
            );
      return { rows: page, calls: calls.map(decodeRow), hasMore, resumeSeq };
    });
  }

  async frames(sessionId: string): Promise<StackFramesRow[]> {
    return (
      await queryRows<StackFramesRow>(this.ds, `SELECT * FROM stack_frames WHERE session_id = $1 ORDER BY ord`, [
        sessionId,
      ])
    ).map(decodeRow);
  }
  async messages(sessionId: string): Promise<ChatHistoryRow[]> {
    return (
      await queryRows<ChatHistoryRow>(this.ds, `SELECT * FROM chat_history WHERE session_id = $1 ORDER BY ord`, [
        sessionId,
      ])
    ).map(decodeRow);
  }
  /** Inbox messages a `/stop` discarded before they entered the conversation, oldest first. */
  async discardedInbox(sessionId: string): Promise<DiscardedInboxRow[]> {
    return (
      await queryRows<DiscardedInboxRow>(
        this.ds,
        `SELECT id, content, attachments, is_synthetic, created_at FROM session_inbox
          WHERE session_id = $1 AND status = 'discarded' AND tool_result IS NULL ORDER BY ord`,
        [sessionId],
      )
    ).map(decodeRow);
  }
  async toolCalls(sessionId: string): Promise<ToolCallsRow[]> {
    return (
      await queryRows<ToolCallsRow>(this.ds, `SELECT * FROM tool_calls WHERE session_id = $1 ORDER BY ord`, [sessionId])
    ).map(decodeRow);
  }

  /** Stored events with `afterSeq < seq <= untilSeq`, oldest first, at most `limit`. */
  async eventsAfter(
    sessionId: string,
    afterSeq: number,
    untilSeq: number,
    limit: number,
  ): Promise<Array<{ seq: SessionEventsRow['seq']; payload: unknown }>> {
    const rows = await queryRows<Pick<SessionEventsRow, 'seq' | 'payload'>>(
      this.ds,
      `SELECT seq, payload FROM session_events WHERE session_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`,
      [sessionId, afterSeq, untilSeq, limit],
    );
    return rows.map((r) => ({ seq: r.seq, payload: fromJsonText(r.payload) }));
  }

  /** Sessions that have work and no live driver: queued input, or a running turn whose lease expired. */
  /**
   * A page of sessions with work and no live driver (a running turn whose lease expired, a stop
   * for a parked turn, queued input of a finished one), in id order after `after` (keyset paging).
   */
  async needingDriver(limit: number, after: string = FIRST_ID): Promise<string[]> {
    const rows = await queryRows<Pick<SessionsRow, 'id'>>(
      this.ds,
      `SELECT s.id FROM sessions s
         LEFT JOIN session_leases l ON l.session_id = s.id
        WHERE ${NO_LIVE_LEASE} AND ${HAS_DRIVER_WORK}
          AND s.id > $2::uuid
        ORDER BY s.id
        LIMIT $1`,
      [limit, after],
    );
    return rows.map((r) => String(r.id));
  }

  /**
   * One session as the sweep judges it (`needingDriver`): `now` when it has work and no live lease
   * holder; the time left on its holder's lease (ms, by the database clock) when it has work and a
   * lease still runs; null when no work waits for a driver.
   */
  async driverWanted(sessionId: string): Promise<{ now: true } | { leaseLeftMs: number } | null> {
    const rows = await queryRows<{ work: boolean; free: boolean; left_ms: number | null }>(
      this.ds,
      `SELECT ${HAS_DRIVER_WORK} AS work, ${NO_LIVE_LEASE} AS free,
              GREATEST(0, EXTRACT(EPOCH FROM (l.expires_at - now())) * 1000)::float8 AS left_ms
         FROM sessions s LEFT JOIN session_leases l ON l.session_id = s.id
        WHERE s.id = $1`,
      [sessionId],
    );
    const r = rows[0];
    if (!r || !r.work) return null;
    return r.free ? { now: true } : { leaseLeftMs: Number(r.left_ms ?? 0) };
  }
}

/** No worker holds the session's lease (`l`), or its holder let it expire (judged by the database clock). */
const NO_LIVE_LEASE = `(l.session_id IS NULL OR l.owner IS NULL OR l.expires_at <= now())`;
/** The session (`s`) has work for a driver: a running turn, a stop for a parked one, or queued input after a finished one. */
const HAS_DRIVER_WORK = `(s.turn_state = 'running'
               OR (s.turn_state = 'parked' AND s.stop_requested_at IS NOT NULL)
               OR (s.turn_state = 'finished'
                   AND EXISTS (SELECT 1 FROM session_inbox i WHERE i.session_id = s.id AND i.status = 'queued')))`;

/** Below every session id: the start of a keyset page. */
export const FIRST_ID = '00000000-0000-0000-0000-000000000000';
