import {
  decodeRow,
  deepToPgText,
  pgParams,
  preparedRows,
  Queryable,
  queryRows as rawQueryRows,
} from '@skald/persistence';
import {
  CompactionSummary,
  FrameRow,
  GrantScope,
  InboxItem,
  LeaseLostError,
  ListMessagesOptions,
  MessageRow,
  Mutation,
  ScratchpadNote,
  SessionEventDraft,
  SessionInfo,
  SessionStore,
  TodoItem,
  ToolCallRow,
} from '@skald/agent-loop';
import { DataSource, EntityManager } from 'typeorm';
import { iso } from '../../sessions/row-format';
import {
  fitsOneStatement,
  oneStatementCommit,
  settledInboxIds,
  UsageRow,
  fenceAndEventParams,
  landingJson,
} from './one-statement-commit';
import { SessionCache } from './session-cache';
import { INBOX_LOCK_ORDER } from './inbox-lock-order';
import type { CarriedHistory } from './history-carry';
import type { EnteredFirst } from '../../submit/inbox.repository';
import type { CommittedEvent } from './committed-event';
import { jsonRows, parseTurnStart, QUEUED_INBOX_JSON, TURN_START_NAME, TURN_START_SQL, TurnStart } from './turn-start';

/** Who writes: the lease holder's epoch fences every commit of a turn. */
export interface Fence {
  owner: string;
  epoch: number;
}

/**
 * A commit Postgres refused because of what it holds (SQLSTATE class 22 data exception, 23
 * integrity, 42 syntax or access, 54 program limit): retrying the same step gives the same answer.
 * Connection losses and lease losses are not this.
 */
export class CommitRejectedError extends Error {
  constructor(
    readonly sqlState: string,
    message: string,
  ) {
    super(message);
    this.name = 'CommitRejectedError';
  }
}

const REJECTING_SQLSTATE = /^(22|23|42|54)/;

function rejected(e: unknown): unknown {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && REJECTING_SQLSTATE.test(code)
    ? new CommitRejectedError(code, e instanceof Error ? e.message : String(e))
    : e;
}

export type { CommittedEvent } from './committed-event';

type Row = Record<string, unknown>;

/**
 * Every read and write of this store goes through the text codec of `@skald/persistence`: a string
 * holding NUL or a lone surrogate (from a model, a tool or a user) is stored losslessly.
 */
async function queryRows<T = Row>(db: Queryable, sql: string, params: unknown[] = []): Promise<T[]> {
  return (await rawQueryRows<T>(db, sql, pgParams(params))).map(decodeRow);
}

async function exec(db: Queryable, sql: string, params: unknown[]): Promise<void> {
  await db.query(sql, pgParams(params));
}

/**
 * The answered model calls whose ledger rows wait to ride with the commit of their message (see
 * LlmUsageRepository): the store takes them for the messages it commits and gives them back if the
 * commit fails.
 */
export interface PendingUsage {
  take(messageIds: readonly string[]): UsageRow[];
  giveBack(rows: readonly UsageRow[]): void;
}

/**
 * How long the queued inbox a commit returned stands for "the inbox now" at the round boundary
 * that follows it, and a read of the session for the next read of it. Reading later than that asks
 * Postgres again. (A message queued after the commit enters at the next boundary or starts the
 * next turn — as one queued just after a read.)
 */
export const INBOX_SNAPSHOT_MS = 1000;

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/**
 * The agent-loop store port on Postgres, for one turn of the lease holder. The frame's rows,
 * grants, scratchpad and compaction are read once and then answered from its `SessionCache`;
 * `commit` appends the events (contiguous `seq` from `sessions.last_seq`) and applies the mutations
 * in one transaction, fenced by the lease epoch (`FOR SHARE` on the lease row, so a take-over
 * waits for the commit or makes it fail). The hot commits (a turn's first commit: its input
 * entering; a round's answer, `running`, result, final answer: see `fitsOneStatement`) are one
 * prepared statement with the fence — and every inbox item it settles still queued here — in every
 * write's `WHERE`; the others a transaction. The ledger rows of the answered model calls whose message a
 * commit writes (`PendingUsage`) ride with it. Committed events are handed to `announce` only after
 * the transaction commits.
 */
export class PgSessionStore implements SessionStore {
  /** The session's rows as this lease holder read and committed them (see SessionCache). */
  private readonly cache = new SessionCache();
  /** The queued inbox as of the last commit, or of `startTurn` (taken once by `listInbox`). */
  private inboxSnapshot: { sessionId: string; at: number; items: InboxItem[] } | null = null;
  /** The session as last read, taken once by the next `getSession` (no commit since, under 1 s). */
  private sessionRead: { at: number; info: SessionInfo } | null = null;
  /** The same, kept until the next commit (see `queuedAtLastCommit`). */
  private lastCommitInbox: InboxItem[] | null = null;
  /**
   * When (performance.now()) this store last sent a statement that reads the queued inbox (a start
   * read, a commit, an inbox read): input whose doorbell rang later may not have been seen by it.
   * 0 before any (a start read the submit's statement made counts as before).
   */
  lastLookAt = 0;
  /** See `stopAtFinish`. */
  private finishStop: boolean | null = null;
  /** See `enteredTurn`. */
  private turnEntered = false;
  /** The active frames as read by `startTurn`, taken once by the next `listActiveFrames` (no commit since, under 1 s). */
  private framesRead: { sessionId: string; at: number; frames: FrameRow[] } | null = null;

  constructor(
    private readonly ds: DataSource,
    private readonly fence: Fence,
    private readonly announce: (events: CommittedEvent[]) => void,
    private readonly usage: PendingUsage | null = null,
  ) {}

  /**
   * Everything the turn reads before its first model call, in one statement (see turn-start.ts):
   * primes (when the session has work: `complete`) the cache (each active frame's messages, tool calls, grants and compaction, the session's
   * grants and scratchpad) and, for their next read, the session, the queued inbox and the active
   * frames — as `getSession` and a one-statement commit prime them. Read after the lease is taken.
   * `carried`: the frames' rows kept from the session's previous turn (HistoryCarry, valid under
   * this lease): not read again, they prime the cache in place of the read ones.
   */
  async startTurn(sessionId: string, carried: CarriedHistory = new Map()): Promise<TurnStart> {
    this.lastLookAt = performance.now();
    const rows = await preparedRows<Row>(
      this.ds,
      TURN_START_NAME,
      TURN_START_SQL,
      pgParams([sessionId, [...carried.keys()]]),
    );
    return this.primeStart(parseTurnStart(sessionId, rows[0], TURN_START_MAPPERS, Date.now(), carried));
  }

  /**
   * The start read taken by the submit's statement (InboxRepository.submitToActive: `row`, its
   * start columns; `excluded`, the frames whose rows it did not read), primed as `startTurn` primes
   * its own. Null when an active frame's rows were not read and are not in `carried` either (the
   * carry was no longer valid under this lease): the caller then reads with `startTurn`.
   */
  startFrom(
    sessionId: string,
    row: Record<string, unknown>,
    excluded: readonly string[],
    carried: CarriedHistory = new Map(),
    at: number = Date.now(),
  ): TurnStart | null {
    const start = parseTurnStart(sessionId, row, TURN_START_MAPPERS, at, carried);
    const skipped = new Set(excluded);
    if (start.frames.some((f) => skipped.has(f.id) && !carried.has(f.id))) return null;
    return this.primeStart(start);
  }

  /**
   * The turn's first commit made by the submit's statement (`entered`), after `startFrom` primed
   * this store with that statement's read (taken in the same snapshot, before those writes): its
   * rows join what the store knows as a commit's would — the root frame it opened among the active
   * frames, the user row in the root's rows. The session read (running, named by the message) and
   * the queued inbox (without the item) already say what the statement left.
   */
  primeEntered(entered: EnteredFirst): void {
    const mutations: Mutation[] = [];
    if (entered.opened) mutations.push({ kind: 'openFrame', frame: entered.frame });
    mutations.push(
      { kind: 'enterInbox', inboxId: entered.message.id, message: entered.message },
      { kind: 'setTurnState', sessionId: entered.frame.sessionId, state: 'running', turnId: entered.message.id },
    );
    this.cache.apply(mutations);
    const read = this.framesRead;
    if (entered.opened && read) {
      // Ordered as read (depth, then insertion): the new root is the only active frame of depth 0.
      const at = read.frames.findIndex((f) => f.depth > 0);
      read.frames.splice(at < 0 ? read.frames.length : at, 0, entered.frame);
    }
  }

  private primeStart(start: TurnStart): TurnStart {
    const sessionId = start.session.id;
    this.sessionRead = { at: start.at, info: start.session };
    this.inboxSnapshot = { sessionId, at: start.at, items: start.inbox };
    if (!start.complete) return start;
    this.framesRead = { sessionId, at: start.at, frames: start.frames };
    for (const [frameId, rows] of start.messages) this.cache.keepMessages(frameId, rows);
    for (const [frameId, calls] of start.toolCalls) this.cache.keepToolCalls(frameId, calls);
    for (const [key, groups] of start.grants) this.cache.keepGrants(key, groups);
    for (const [frameId, summary] of start.compactions) this.cache.keepCompaction(frameId, summary);
    this.cache.keepScratchpad(start.session.scratchpadSessionId, start.scratchpad);
    return start;
  }

  /** The frames' rows this store knows whole (read and kept up to date with its commits), for the session's next turn. */
  history(): CarriedHistory {
    return this.cache.history();
  }

  async getSession(sessionId: string): Promise<SessionInfo> {
    // The driver reads the session to choose the turn, and the turn at its start reads it again:
    // the second read takes the first if nothing was committed since and it is under 1 s old.
    const kept = this.sessionRead;
    this.sessionRead = null;
    if (kept && kept.info.id === sessionId && Date.now() - kept.at <= INBOX_SNAPSHOT_MS) return kept.info;
    const info = await this.readSession(sessionId);
    this.sessionRead = { at: Date.now(), info };
    return info;
  }

  private async readSession(sessionId: string): Promise<SessionInfo> {
    // The user's pin for the session's source (`/model`, `select_client`) is the session's pin.
    const rows: Row[] = await queryRows(
      this.ds,
      `SELECT s.*, p.client AS user_pin FROM sessions s
         LEFT JOIN llm_client_pins p ON p.user_id = s.user_id AND p.source = s.source
        WHERE s.id = $1`,
      [sessionId],
    );
    const r = rows[0];
    if (!r) throw new Error(`session ${sessionId} not found`);
    return toSessionInfo(r);
  }

  async listActiveFrames(sessionId: string): Promise<FrameRow[]> {
    const kept = this.framesRead;
    this.framesRead = null;
    if (kept && kept.sessionId === sessionId && Date.now() - kept.at <= INBOX_SNAPSHOT_MS) return kept.frames;
    return this.readActiveFrames(sessionId);
  }

  private async readActiveFrames(sessionId: string): Promise<FrameRow[]> {
    const rows: Row[] = await queryRows(
      this.ds,
      `SELECT * FROM stack_frames WHERE session_id = $1 AND status = 'active' ORDER BY depth, ord`,
      [sessionId],
    );
    return rows.map(toFrame);
  }

  async getFrame(frameId: string): Promise<FrameRow | null> {
    const rows: Row[] = await queryRows(this.ds, `SELECT * FROM stack_frames WHERE id = $1`, [frameId]);
    return rows[0] ? toFrame(rows[0]) : null;
  }

  async listMessages(frameId: string, options: ListMessagesOptions = {}): Promise<MessageRow[]> {
    const cached = this.cache.listMessages(frameId, options);
    if (cached) return cached;
    this.cache.keepMessages(frameId, await this.readMessages(frameId, { includeFailed: true }));
    return this.cache.listMessages(frameId, options) ?? this.readMessages(frameId, options);
  }

  private async readMessages(frameId: string, options: ListMessagesOptions): Promise<MessageRow[]> {
    const params: unknown[] = [frameId];
    let where = `frame_id = $1`;
    if (!options.includeFailed) where += ` AND status = 'ok'`;
    if (options.afterMessageId) {
      params.push(options.afterMessageId);
      where += ` AND ord > (SELECT ord FROM chat_history WHERE id = $2)`;
    }
    const rows: Row[] = await queryRows(this.ds, `SELECT * FROM chat_history WHERE ${where} ORDER BY ord`, params);
    return rows.map(toMessage);
  }

  async listToolCalls(frameId: string): Promise<ToolCallRow[]> {
    const cached = this.cache.listToolCalls(frameId);
    if (cached) return cached;
    const rows: Row[] = await queryRows(this.ds, `SELECT * FROM tool_calls WHERE frame_id = $1 ORDER BY ord`, [
      frameId,
    ]);
    const calls = rows.map(toToolCall);
    this.cache.keepToolCalls(frameId, calls);
    return calls;
  }

  async getToolCall(toolCallId: string): Promise<ToolCallRow | null> {
    const rows: Row[] = await queryRows(this.ds, `SELECT * FROM tool_calls WHERE id = $1`, [toolCallId]);
    return rows[0] ? toToolCall(rows[0]) : null;
  }

  async getScratchpad(scratchpadSessionId: string): Promise<ScratchpadNote[]> {
    const cached = this.cache.getScratchpad(scratchpadSessionId);
    if (cached) return cached;
    const notes = await this.readScratchpad(scratchpadSessionId);
    this.cache.keepScratchpad(scratchpadSessionId, notes);
    return notes;
  }

  private async readScratchpad(scratchpadSessionId: string): Promise<ScratchpadNote[]> {
    const rows: Row[] = await queryRows(
      this.ds,
      `SELECT key, value FROM session_scratchpad WHERE scratchpad_session_id = $1 ORDER BY ord`,
      [scratchpadSessionId],
    );
    return rows.map((r) => ({ key: String(r.key), value: String(r.value) }));
  }

  async getTodos(frameId: string): Promise<TodoItem[]> {
    const rows: Row[] = await queryRows(this.ds, `SELECT todos FROM session_todos WHERE frame_id = $1`, [frameId]);
    return (rows[0]?.todos as TodoItem[] | undefined) ?? [];
  }

  async getGrants(scope: GrantScope): Promise<string[]> {
    const key = scope.kind === 'session' ? `s:${scope.sessionId}` : `f:${scope.frameId}`;
    const cached = this.cache.getGrants(key);
    if (cached) return cached;
    const groups = await this.readGrants(scope);
    this.cache.keepGrants(key, groups);
    return groups;
  }

  /**
   * Drops every tool grant of the session (the root's and every frame's) under this store's lease,
   * in one statement that writes nothing unless the lease is still held under its epoch; the groups
   * dropped, sorted and once each. Throws `LeaseLostError` when the lease is not held.
   */
  async revokeAllGrants(sessionId: string): Promise<string[]> {
    const rows: Row[] = await queryRows(
      this.ds,
      `WITH fence AS (
         SELECT epoch FROM session_leases
          WHERE session_id = $1 AND owner = $2 AND epoch = $3 AND expires_at > now() FOR SHARE),
       gone AS (
         DELETE FROM tool_grants WHERE session_id = $1 AND EXISTS (SELECT 1 FROM fence) RETURNING group_name)
       SELECT (SELECT count(*) FROM fence)::int AS fenced,
              COALESCE((SELECT json_agg(DISTINCT group_name ORDER BY group_name) FROM gone), '[]'::json) AS groups`,
      [sessionId, this.fence.owner, this.fence.epoch],
    );
    if (Number(rows[0]?.fenced) === 0)
      throw new LeaseLostError(`lease of session ${sessionId} lost (epoch ${this.fence.epoch})`);
    this.cache.clearGrants();
    return (rows[0].groups as unknown[]).map(String);
  }

  private async readGrants(scope: GrantScope): Promise<string[]> {
    const rows: Row[] =
      scope.kind === 'session'
        ? await queryRows(
            this.ds,
            `SELECT group_name FROM tool_grants WHERE session_id = $1 AND frame_id IS NULL ORDER BY created_at, group_name`,
            [scope.sessionId],
          )
        : await queryRows(
            this.ds,
            `SELECT group_name FROM tool_grants WHERE frame_id = $1 ORDER BY created_at, group_name`,
            [scope.frameId],
          );
    return rows.map((r) => String(r.group_name));
  }

  async getCompaction(frameId: string): Promise<CompactionSummary | null> {
    const cached = this.cache.getCompaction(frameId);
    if (cached !== undefined) return cached;
    const rows: Row[] = await queryRows(this.ds, `SELECT * FROM compaction_summaries WHERE frame_id = $1`, [frameId]);
    const r = rows[0];
    const summary = r
      ? { frameId: String(r.frame_id), summary: String(r.summary), boundaryMessageId: String(r.boundary_message_id) }
      : null;
    this.cache.keepCompaction(frameId, summary);
    return summary;
  }

  async listInbox(sessionId: string): Promise<InboxItem[]> {
    const snapshot = this.inboxSnapshot;
    this.inboxSnapshot = null;
    if (snapshot && snapshot.sessionId === sessionId && Date.now() - snapshot.at <= INBOX_SNAPSHOT_MS)
      return snapshot.items;
    this.lastLookAt = performance.now();
    const rows: Row[] = await queryRows(
      this.ds,
      `SELECT * FROM session_inbox WHERE session_id = $1 AND status = 'queued' ORDER BY ord`,
      [sessionId],
    );
    return rows.map(toInboxItem);
  }

  /**
   * The session's queued inbox as of this store's last commit (a one-statement commit reads it; a
   * transaction's fence statement reads it and the commit's own settlements are left out); null
   * before the first commit or after a failed one. The driver asks it after a turn ended: an empty
   * inbox at the turn's last commit means nothing more to do (what is queued later is found after
   * the release).
   */
  /**
   * Whether a /stop was recorded when this store's last commit finished the turn — known when that
   * commit was one statement that set `turn_state = 'finished'` (it returns the session row as it
   * updated it); null otherwise. `false` means there is no stop to clear: a stop committed before
   * that statement is in the row it updated (or waited for), and after it a stop is refused
   * (`requestStop` needs an unfinished turn). See pg-session-store.stop.integration-spec.ts.
   */
  stopAtFinish(): boolean | null {
    return this.finishStop;
  }

  /**
   * Whether a commit of this store started a turn (entered its input: the turn state set to running
   * under the input's id). A driver that lost the lease before that commit started nothing: the next
   * driver starts the same input.
   */
  enteredTurn(): boolean {
    return this.turnEntered;
  }

  queuedAtLastCommit(): readonly InboxItem[] | null {
    return this.lastCommitInbox;
  }

  async commit(sessionId: string, mutations: Mutation[], events: SessionEventDraft[]): Promise<void> {
    this.lastLookAt = performance.now();
    this.inboxSnapshot = null;
    this.lastCommitInbox = null;
    this.sessionRead = null;
    this.framesRead = null;
    this.finishStop = null;
    const usage = this.usage?.take(messageIdsOf(mutations)) ?? [];
    let committed: CommittedEvent[];
    try {
      committed = fitsOneStatement(mutations)
        ? await this.writeOneStatement(sessionId, mutations, events, usage)
        : await this.writeFenced(sessionId, mutations, events, usage);
    } catch (e) {
      // Whether a failed commit wrote anything is not known here: read from Postgres again.
      this.cache.clear();
      this.inboxSnapshot = null;
      this.lastCommitInbox = null;
      this.usage?.giveBack(usage);
      throw e;
    }
    this.cache.apply(mutations);
    if (mutations.some((m) => m.kind === 'setTurnState' && m.state === 'running' && m.turnId)) this.turnEntered = true;
    if (committed.length > 0) this.announce(committed);
  }

  /** The commit as one prepared statement (see one-statement-commit.ts). */
  private async writeOneStatement(
    sessionId: string,
    mutations: Mutation[],
    events: SessionEventDraft[],
    usage: UsageRow[],
  ): Promise<CommittedEvent[]> {
    let rows: Row[];
    try {
      const statement = oneStatementCommit(sessionId, this.fence, mutations, events, usage);
      rows = await preparedRows<Row>(this.ds, statement.name, statement.text, statement.values);
    } catch (e) {
      throw rejected(e);
    }
    const head = rows[0];
    if (!head || Number(head.fenced) === 0)
      throw new LeaseLostError(`lease of session ${sessionId} lost (epoch ${this.fence.epoch})`);
    if (head.ok !== true) {
      // An item it enters or consumes was not queued here (`go`): nothing was written.
      const claimed = new Set(head.claimed as string[]);
      const gone = settledInboxIds(mutations).find((id) => !claimed.has(id));
      throw notQueued(gone ?? 'of this commit');
    }
    const items = inboxOf(head.inbox);
    this.inboxSnapshot = { sessionId, at: Date.now(), items };
    this.lastCommitInbox = items;
    if (mutations.some((m) => m.kind === 'setTurnState' && m.state === 'finished') && typeof head.stop === 'boolean')
      this.finishStop = head.stop;
    if (events.length === 0) return [];
    if (head.last_seq === null || head.last_seq === undefined) throw new Error(`session ${sessionId} not found`);
    const first = Number(head.last_seq) - events.length + 1;
    return events.map((event, i) => ({ userId: String(head.user_id), sessionId, seq: first + i, event }));
  }

  private async writeFenced(
    sessionId: string,
    mutations: Mutation[],
    events: SessionEventDraft[],
    usage: UsageRow[],
  ): Promise<CommittedEvent[]> {
    const committed = await this.ds.transaction(async (tx) => {
      const fenced = await fenceAndAppend(tx, sessionId, this.fence, events);
      try {
        await lockInboxItems(tx, mutations);
        for (const m of mutations) await applyMutation(tx, sessionId, m, this.fence.epoch, events.length);
        for (const u of usage) await insertUsage(tx, u);
        return fenced;
      } catch (e) {
        throw rejected(e);
      }
    });
    // The queued inbox as the fence statement saw it, less what this commit settled: the inbox as
    // of the commit, as a one-statement commit returns it.
    const settled = new Set(inboxIdsSettledBy(mutations));
    const items = committed.inbox.filter((i) => !settled.has(i.id));
    this.inboxSnapshot = { sessionId, at: Date.now(), items };
    this.lastCommitInbox = items;
    return committed.events;
  }
}

/** The messages a commit writes (their answered model calls' usage rides with them). */
function messageIdsOf(mutations: readonly Mutation[]): string[] {
  const ids: string[] = [];
  for (const m of mutations) if (m.kind === 'appendMessage' || m.kind === 'enterInbox') ids.push(m.message.id);
  return ids;
}

/**
 * One `llm_usage` row: inside a commit (its message's), or alone by the LlmUsageRepository —
 * `unlessCommitted` then skips it when its message exists (the commit wrote the row with it).
 */
export async function insertUsage(db: Queryable, r: UsageRow, unlessCommitted = false): Promise<void> {
  await exec(
    db,
    `INSERT INTO llm_usage (user_id, session_id, frame_id, message_id, purpose, client, model,
                            input_tokens, output_tokens, cached_input_tokens, estimated, cost_usd)
     SELECT $1::uuid, $2::uuid, $3::uuid, $4::uuid, $5, $6, $7, $8::integer, $9::integer, $10::integer, $11::boolean,
            $12::numeric
      WHERE NOT ($13::boolean AND EXISTS (SELECT 1 FROM chat_history WHERE id = $4::uuid))`,
    [
      r.userId,
      r.sessionId,
      r.frameId,
      r.messageId,
      r.purpose,
      r.client,
      r.model,
      r.inputTokens,
      r.outputTokens,
      r.cachedInputTokens,
      r.estimated,
      r.costUsd,
      unlessCommitted,
    ],
  );
}

/**
 * The first statement of every commit: the fence — `FOR SHARE` on the lease row, so a take-over
 * waits for this commit or this commit sees it and writes nothing — and, with events, the next
 * contiguous seqs (`sessions.last_seq`) and the event rows, in one statement. Throws
 * `LeaseLostError` when the lease is not held under this epoch.
 */
async function fenceAndAppend(
  tx: EntityManager,
  sessionId: string,
  fence: Fence,
  events: SessionEventDraft[],
): Promise<{ events: CommittedEvent[]; inbox: InboxItem[] }> {
  const lost = (): LeaseLostError => new LeaseLostError(`lease of session ${sessionId} lost (epoch ${fence.epoch})`);
  if (events.length === 0) {
    const lease: Row[] = await rawQueryRows(
      tx,
      `SELECT epoch, ${QUEUED_INBOX_JSON} AS inbox FROM session_leases
        WHERE session_id = $1 AND owner = $2 AND epoch = $3 AND expires_at > now() FOR SHARE`,
      pgParams([sessionId, fence.owner, fence.epoch]),
    );
    if (lease.length === 0) throw lost();
    return { events: [], inbox: inboxOf(lease[0].inbox) };
  }
  let rows: Row[];
  try {
    rows = await rawQueryRows(
      tx,
      `WITH fence AS (
         SELECT epoch FROM session_leases
          WHERE session_id = $1 AND owner = $2 AND epoch = $3 AND expires_at > now() FOR SHARE),
       head AS (
         UPDATE sessions SET last_seq = last_seq + $4, updated_at = now()
          WHERE id = $1 AND EXISTS (SELECT 1 FROM fence) RETURNING last_seq, user_id),
       appended AS (
         INSERT INTO session_events (session_id, seq, type, payload)
         SELECT $1, head.last_seq - $4 + u.n, u.t, u.p
           FROM head, unnest($5::text[], $6::text[]) WITH ORDINALITY AS u(t, p, n))
       SELECT (SELECT count(*) FROM fence)::int AS fenced, head.last_seq, head.user_id,
              CASE WHEN EXISTS (SELECT 1 FROM fence) THEN ${QUEUED_INBOX_JSON} END AS inbox
         FROM (SELECT 1) AS one LEFT JOIN head ON true`,
      pgParams(fenceAndEventParams(sessionId, fence, events)),
    );
  } catch (e) {
    throw rejected(e);
  }
  const head = rows[0];
  if (!head || Number(head.fenced) === 0) throw lost();
  if (head.last_seq === null || head.last_seq === undefined) throw new Error(`session ${sessionId} not found`);
  const first = Number(head.last_seq) - events.length + 1;
  return {
    events: events.map((event, i) => ({ userId: String(head.user_id), sessionId, seq: first + i, event })),
    inbox: inboxOf(head.inbox),
  };
}

/** A JSON aggregate of queued inbox rows (see QUEUED_INBOX_JSON and the one-statement commit). */
function inboxOf(json: unknown): InboxItem[] {
  return jsonRows(json, ['created_at']).map(toInboxItem);
}

const TURN_START_MAPPERS = {
  toSessionInfo: (r: Row) => toSessionInfo(r),
  toFrame: (r: Row) => toFrame(r),
  toMessage: (r: Row) => toMessage(r),
  toToolCall: (r: Row) => toToolCall(r),
  toInboxItem: (r: Row) => toInboxItem(r),
};

/**
 * Settles one queued inbox item of this session, only while it is queued HERE: an item moved to
 * another conversation after it was read (a `/new` re-homes the reset conversation's deliveries)
 * is neither entered nor discarded here — that would take it from the conversation it now belongs
 * to. Entering one that is gone refuses the commit; discarding one is a no-op (a /stop's discard
 * must not fail over an item that left).
 */
async function settleInbox(
  tx: EntityManager,
  sessionId: string,
  inboxId: string,
  status: 'entered' | 'discarded',
): Promise<void> {
  const r: Row[] = await queryRows(
    tx,
    `UPDATE session_inbox SET status = $3, settled_at = now()
      WHERE id = $1 AND session_id = $2 AND status = 'queued' RETURNING id`,
    [inboxId, sessionId, status],
  );
  if (r.length === 0 && status === 'entered') throw notQueued(inboxId);
}

/**
 * The inbox rows a commit settles, locked up front in the one order every statement locks them in
 * (`INBOX_LOCK_ORDER`), not in the order the commit lists them: a racing `/new` moving the same
 * deliveries would otherwise deadlock with it. One item needs no statement (its update locks it).
 */
async function lockInboxItems(tx: EntityManager, mutations: readonly Mutation[]): Promise<void> {
  const ids = inboxIdsSettledBy(mutations);
  if (ids.length < 2) return;
  await exec(tx, `SELECT 1 FROM session_inbox WHERE id = ANY($1::uuid[]) ${INBOX_LOCK_ORDER}`, [ids]);
}

/** The inbox items a commit settles (enters, consumes or discards), in the order it lists them. */
function inboxIdsSettledBy(mutations: readonly Mutation[]): string[] {
  return mutations.flatMap((m) =>
    m.kind === 'enterInbox' || m.kind === 'consumeInbox' || m.kind === 'discardInbox' ? [m.inboxId] : [],
  );
}

/** An inbox item a commit enters or consumes is no longer queued in its session: the commit is refused. */
function notQueued(inboxId: string): Error {
  return new Error(`inbox item ${inboxId} already settled or moved to another conversation`);
}

/** `eventCount`: the events of this commit, already appended (a new turn's `turn_seq` precedes them). */
async function applyMutation(
  tx: EntityManager,
  sessionId: string,
  m: Mutation,
  epoch: number,
  eventCount: number,
): Promise<void> {
  switch (m.kind) {
    case 'appendMessage':
    case 'enterInbox': {
      const msg = m.message;
      if (m.kind === 'enterInbox') await settleInbox(tx, sessionId, m.inboxId, 'entered');
      await exec(
        tx,
        `INSERT INTO chat_history (id, session_id, frame_id, role, content, reasoning, is_synthetic, status, metadata,
                                   client_message_id, input_tokens, output_tokens, epoch, created_at,
                                   cost_usd, tokens_estimated, llm_client, llm_model)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
        [
          msg.id,
          msg.sessionId,
          msg.frameId,
          msg.role,
          msg.content,
          msg.reasoningContent,
          msg.isSynthetic,
          msg.status ?? 'ok',
          msg.attachments ? JSON.stringify(deepToPgText({ attachments: msg.attachments })) : null,
          msg.clientMessageId,
          msg.inputTokens,
          msg.outputTokens,
          epoch,
          msg.createdAt,
          msg.costUsd ?? null,
          msg.tokensEstimated ?? false,
          msg.llmClient ?? null,
          msg.llmModel ?? null,
        ],
      );
      return;
    }
    case 'markMessageFailed':
      await exec(tx, `UPDATE chat_history SET status = 'failed' WHERE id = $1`, [m.messageId]);
      return;
    case 'supersedeMessages':
      await exec(
        tx,
        `UPDATE chat_history SET status = 'superseded', superseded_at = now() WHERE id = ANY($1::uuid[])`,
        [m.messageIds],
      );
      return;
    case 'discardInbox':
      await settleInbox(tx, sessionId, m.inboxId, 'discarded');
      return;
    case 'consumeInbox':
      await settleInbox(tx, sessionId, m.inboxId, 'entered');
      return;
    case 'createToolCall': {
      const c = m.call;
      await exec(
        tx,
        `INSERT INTO tool_calls (id, session_id, frame_id, message_id, idx, llm_call_id, name, arguments, status, result,
                                 result_type, request_id, child_frame_id, preview_hash, epoch, judged_landing)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16::jsonb)`,
        [
          c.id,
          c.sessionId,
          c.frameId,
          c.messageId,
          c.index,
          c.llmCallId,
          c.name,
          c.argumentsText,
          c.status,
          c.result,
          c.resultType,
          c.requestId,
          c.childFrameId,
          c.previewHash ?? null,
          epoch,
          landingJson(c.judgedLanding),
        ],
      );
      return;
    }
    case 'updateToolCall': {
      const p = m.patch;
      await exec(
        tx,
        `UPDATE tool_calls SET status = $2,
            result = CASE WHEN $3::boolean THEN $4 ELSE result END,
            result_type = CASE WHEN $5::boolean THEN $6 ELSE result_type END,
            request_id = CASE WHEN $7::boolean THEN $8::uuid ELSE request_id END,
            child_frame_id = CASE WHEN $9::boolean THEN $10::uuid ELSE child_frame_id END,
            preview_hash = CASE WHEN $12::boolean THEN $13 ELSE preview_hash END,
            stale_reasks = COALESCE($14::integer, stale_reasks),
            judged_landing = CASE WHEN $15::boolean THEN $16::jsonb ELSE judged_landing END,
            started_at = CASE WHEN $2 = 'running' AND started_at IS NULL THEN now() ELSE started_at END,
            finished_at = CASE WHEN $2 IN ('done', 'failed', 'rejected', 'cancelled', 'interrupted') THEN now() ELSE finished_at END,
            epoch = $11
          WHERE id = $1`,
        [
          m.id,
          p.status,
          p.result !== undefined,
          p.result ?? null,
          p.resultType !== undefined,
          p.resultType ?? null,
          p.requestId !== undefined,
          p.requestId ?? null,
          p.childFrameId !== undefined,
          p.childFrameId ?? null,
          epoch,
          p.previewHash !== undefined,
          p.previewHash ?? null,
          p.staleReasks ?? null,
          p.judgedLanding !== undefined,
          landingJson(p.judgedLanding),
        ],
      );
      return;
    }
    case 'openFrame': {
      const f = m.frame;
      await exec(
        tx,
        `INSERT INTO stack_frames (id, session_id, parent_frame_id, parent_tool_call_id, agent_id, depth, status, client, epoch)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [f.id, f.sessionId, f.parentFrameId, f.parentToolCallId, f.agentId, f.depth, f.status, f.clientPin, epoch],
      );
      return;
    }
    case 'closeFrame': {
      const r: Row[] = await queryRows(
        tx,
        `UPDATE stack_frames SET status = 'closed', closed_at = now(), epoch = $2 WHERE id = $1 AND status = 'active' RETURNING id`,
        [m.frameId, epoch],
      );
      if (r.length === 0) throw new Error(`frame ${m.frameId} is not active`);
      return;
    }
    case 'setScratchpad':
      if (m.value === null) {
        await exec(tx, `DELETE FROM session_scratchpad WHERE scratchpad_session_id = $1 AND key = $2`, [
          m.scratchpadSessionId,
          m.key,
        ]);
      } else {
        await exec(
          tx,
          `INSERT INTO session_scratchpad (scratchpad_session_id, key, value) VALUES ($1, $2, $3)
           ON CONFLICT (scratchpad_session_id, key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
          [m.scratchpadSessionId, m.key, m.value],
        );
      }
      return;
    case 'setTodos':
      await exec(
        tx,
        `INSERT INTO session_todos (session_id, frame_id, todos) VALUES ($1, $2, $3)
         ON CONFLICT (session_id, frame_id) DO UPDATE SET todos = EXCLUDED.todos, updated_at = now()`,
        [m.sessionId, m.frameId, JSON.stringify(deepToPgText(m.todos))],
      );
      return;
    case 'grantTools': {
      const sessionId = m.scope.kind === 'session' ? m.scope.sessionId : null;
      const frameId = m.scope.kind === 'frame' ? m.scope.frameId : null;
      for (const g of m.groups) {
        await exec(
          tx,
          `INSERT INTO tool_grants (session_id, frame_id, group_name)
           VALUES (COALESCE($1::uuid, (SELECT session_id FROM stack_frames WHERE id = $2::uuid)), $2::uuid, $3)
           ON CONFLICT DO NOTHING`,
          [sessionId, frameId, g],
        );
      }
      return;
    }
    case 'setCompaction': {
      const s = m.summary;
      await exec(
        tx,
        `INSERT INTO compaction_summaries (session_id, frame_id, summary, boundary_message_id)
         SELECT session_id, id, $2, $3 FROM stack_frames WHERE id = $1
         ON CONFLICT (session_id, frame_id) DO UPDATE SET summary = EXCLUDED.summary,
           boundary_message_id = EXCLUDED.boundary_message_id, updated_at = now()`,
        [s.frameId, s.summary, s.boundaryMessageId],
      );
      return;
    }
    case 'setTurnState':
      await exec(
        tx,
        `UPDATE sessions SET turn_state = $2, turn_id = COALESCE($3, turn_id),
                turn_seq = CASE WHEN $3 IS NULL THEN turn_seq ELSE last_seq - $4 END, updated_at = now()
          WHERE id = $1`,
        [m.sessionId, m.state, m.turnId ?? null, eventCount],
      );
      return;
    default: {
      const never: never = m;
      throw new Error(`unknown mutation ${JSON.stringify(never)}`);
    }
  }
}

export function toSessionInfo(r: Row): SessionInfo {
  const rc = (r.run_context ?? {}) as {
    working_directory?: string;
    system_prompt?: string[];
    allow_fs_reads?: string[];
    allow_fs_writes?: string[];
    enabled_mcp_servers?: string[];
  };
  return {
    id: String(r.id),
    userId: String(r.user_id),
    agentId: String(r.agent_id),
    source: String(r.source),
    isInteractive: Boolean(r.is_interactive),
    isEphemeral: Boolean(r.is_ephemeral),
    autoDenyApprovals: Boolean(r.auto_deny_approvals),
    scratchpadSessionId: String(r.scratchpad_session_id ?? r.id),
    runContext: {
      workingDirectory: rc.working_directory ?? null,
      systemPrompt: rc.system_prompt ?? [],
      allowFsReads: stringList(rc.allow_fs_reads),
      allowFsWrites: stringList(rc.allow_fs_writes),
      enabledMcpServers: stringList(rc.enabled_mcp_servers),
    },
    securityGroup: typeof r.security_group === 'string' && r.security_group !== '' ? r.security_group : null,
    pinnedClient: (r.user_pin as string | null) ?? (r.client_pin as string | null) ?? null,
    turnState: r.turn_state as SessionInfo['turnState'],
    turnId: (r.turn_id as string | null) ?? null,
  };
}

/** A stored list of paths; anything else (an old or hand-edited row) counts as none. */
function stringList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function toFrame(r: Row): FrameRow {
  return {
    id: String(r.id),
    sessionId: String(r.session_id),
    parentFrameId: (r.parent_frame_id as string | null) ?? null,
    parentToolCallId: (r.parent_tool_call_id as string | null) ?? null,
    agentId: String(r.agent_id),
    depth: Number(r.depth),
    status: r.status as FrameRow['status'],
    clientPin: (r.client as string | null) ?? null,
  };
}

export function toMessage(r: Row): MessageRow {
  const meta = r.metadata as { attachments?: MessageRow['attachments'] } | null;
  return {
    id: String(r.id),
    sessionId: String(r.session_id),
    frameId: String(r.frame_id),
    role: r.role as MessageRow['role'],
    content: String(r.content),
    reasoningContent: (r.reasoning as string | null) ?? null,
    status: r.status as MessageRow['status'],
    isSynthetic: Boolean(r.is_synthetic),
    attachments: meta?.attachments ?? null,
    clientMessageId: (r.client_message_id as string | null) ?? null,
    inputTokens: num(r.input_tokens),
    outputTokens: num(r.output_tokens),
    costUsd: r.cost_usd === null || r.cost_usd === undefined ? null : Number(r.cost_usd),
    tokensEstimated: Boolean(r.tokens_estimated),
    llmClient: (r.llm_client as string | null) ?? null,
    llmModel: (r.llm_model as string | null) ?? null,
    createdAt: iso(r.created_at),
  };
}

export function toToolCall(r: Row): ToolCallRow {
  return {
    id: String(r.id),
    sessionId: String(r.session_id),
    frameId: String(r.frame_id),
    messageId: String(r.message_id),
    index: Number(r.idx),
    llmCallId: String(r.llm_call_id),
    name: String(r.name),
    argumentsText: String(r.arguments),
    status: r.status as ToolCallRow['status'],
    result: (r.result as string | null) ?? null,
    resultType: (r.result_type as string | null) ?? null,
    requestId: (r.request_id as string | null) ?? null,
    childFrameId: (r.child_frame_id as string | null) ?? null,
    previewHash: (r.preview_hash as string | null) ?? null,
    ...(r.stale_reasks ? { staleReasks: Number(r.stale_reasks) } : {}),
    judgedLanding: (r.judged_landing as ToolCallRow['judgedLanding']) ?? null,
  };
}

function toInboxItem(r: Row): InboxItem {
  return {
    id: String(r.id),
    sessionId: String(r.session_id),
    clientMessageId: String(r.client_message_id),
    content: String(r.content),
    attachments: (r.attachments as InboxItem['attachments']) ?? null,
    delivery: r.delivery as InboxItem['delivery'],
    createdAt: iso(r.created_at),
    ...(r.tool_result ? { toolResult: toolResultOf(r.tool_result) } : {}),
    ...(r.is_synthetic === true ? { isSynthetic: true } : {}),
    ...(r.rewind_kind
      ? { rewind: { kind: r.rewind_kind as 'regenerate' | 'edit', messageId: String(r.rewind_message_id) } }
      : {}),
  };
}

/** `session_inbox.tool_result`: a system delivery (an async task's result) entering as a completed call. */
function toolResultOf(v: unknown): InboxItem['toolResult'] {
  const t = v as { tool_name: string; arguments_text: string; result: string };
  return { toolName: t.tool_name, argumentsText: t.arguments_text, result: t.result };
}
