import { pgParams } from '@skald/persistence/pg-text';
import { preparedRows } from '@skald/persistence/query-rows';
import {
  CompactionSummary,
  FrameRow,
  GrantScope,
  InboxItem,
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
import { Database } from '@skald/persistence/database';
import { SessionCache } from './session-cache';
import type { CarriedHistory } from './history-carry';
import type { EnteredFirst } from '../../submit/entered-first';
import type { CommittedEvent } from './committed-event';
import type { Fence } from './fence';
import { messageIdsOf, revokeGrants } from './mutation-sql';
import {
  readActiveFrames,
  readCompaction,
  readFrame,
  readGrants,
  readMessages,
  readQueuedInbox,
  readScratchpad,
  readSession,
  readToolCall,
  readToolCalls,
  readTodos,
} from './session-reads';
import { TURN_START_MAPPERS } from './session-rows';
import type { TurnStartRead } from './turn-start';
import { PendingUsage, writeCommit } from './store-commit';
import { parseTurnStart, TURN_START_NAME, TURN_START_SQL, TurnStart } from './turn-start';
import type { OwnerBudget } from '../../budgets/budget-rules';
import { NO_GROUPS, type GroupPolicy } from '../../groups/group-policy';

// The store port as a composition: the rows and their mapping (session-rows.ts), the reads
// (session-reads.ts), the mutations' statements (mutation-sql.ts), the commit (store-commit.ts,
// one-statement-commit.ts) and the event log (event-log.ts); this class keeps what the lease holder
// remembers between them (its cache and the reads it may answer again).

/**
 * How long the queued inbox a commit returned stands for "the inbox now" at the round boundary
 * that follows it, and a read of the session for the next read of it. Reading later than that asks
 * Postgres again. (A message queued after the commit enters at the next boundary or starts the
 * next turn — as one queued just after a read.)
 */
export const INBOX_SNAPSHOT_MS = 1000;

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
  /** What the owner's groups allow, as the last start read saw them (none read yet: no group). */
  private groups: GroupPolicy = NO_GROUPS;
  /** The owner's limits, as the last start read saw them; null: none read yet (the budget gate reads them). */
  private budget: OwnerBudget | null = null;
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
    private readonly ds: Database,
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
    const rows = await preparedRows<TurnStartRead>(
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
    row: TurnStartRead,
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

  /** What the session owner's groups allow, as this turn's start read them (or as primed by `primeOwnerGroups`). */
  ownerGroups(): GroupPolicy {
    return this.groups;
  }

  /** A store used without a turn's start (/context, /compact) holds the owner's policy read on its own. */
  primeOwnerGroups(groups: GroupPolicy): void {
    this.groups = groups;
  }

  /** The session owner's limits as this turn's start read them (null: no start read yet). */
  ownerBudget(): OwnerBudget | null {
    return this.budget;
  }

  private primeStart(start: TurnStart): TurnStart {
    const sessionId = start.session.id;
    this.sessionRead = { at: start.at, info: start.session };
    this.inboxSnapshot = { sessionId, at: start.at, items: start.inbox };
    this.groups = start.groups;
    this.budget = start.budget;
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
    const info = await readSession(this.ds, sessionId);
    this.sessionRead = { at: Date.now(), info };
    return info;
  }

  async listActiveFrames(sessionId: string): Promise<FrameRow[]> {
    const kept = this.framesRead;
    this.framesRead = null;
    if (kept && kept.sessionId === sessionId && Date.now() - kept.at <= INBOX_SNAPSHOT_MS) return kept.frames;
    return readActiveFrames(this.ds, sessionId);
  }

  getFrame(frameId: string): Promise<FrameRow | null> {
    return readFrame(this.ds, frameId);
  }

  async listMessages(frameId: string, options: ListMessagesOptions = {}): Promise<MessageRow[]> {
    const cached = this.cache.listMessages(frameId, options);
    if (cached) return cached;
    this.cache.keepMessages(frameId, await readMessages(this.ds, frameId, { includeFailed: true }));
    return this.cache.listMessages(frameId, options) ?? readMessages(this.ds, frameId, options);
  }

  async listToolCalls(frameId: string): Promise<ToolCallRow[]> {
    const cached = this.cache.listToolCalls(frameId);
    if (cached) return cached;
    const calls = await readToolCalls(this.ds, frameId);
    this.cache.keepToolCalls(frameId, calls);
    return calls;
  }

  getToolCall(toolCallId: string): Promise<ToolCallRow | null> {
    return readToolCall(this.ds, toolCallId);
  }

  async getScratchpad(scratchpadSessionId: string): Promise<ScratchpadNote[]> {
    const cached = this.cache.getScratchpad(scratchpadSessionId);
    if (cached) return cached;
    const notes = await readScratchpad(this.ds, scratchpadSessionId);
    this.cache.keepScratchpad(scratchpadSessionId, notes);
    return notes;
  }

  getTodos(frameId: string): Promise<TodoItem[]> {
    return readTodos(this.ds, frameId);
  }

  async getGrants(scope: GrantScope): Promise<string[]> {
    const key = scope.kind === 'session' ? `s:${scope.sessionId}` : `f:${scope.frameId}`;
    const cached = this.cache.getGrants(key);
    if (cached) return cached;
    const groups = await readGrants(this.ds, scope);
    this.cache.keepGrants(key, groups);
    return groups;
  }

  /**
   * Drops every tool grant of the session (the root's and every frame's) under this store's lease,
   * in one statement that writes nothing unless the lease is still held under its epoch; the groups
   * dropped, sorted and once each. Throws `LeaseLostError` when the lease is not held.
   */
  async revokeAllGrants(sessionId: string): Promise<string[]> {
    const groups = await revokeGrants(this.ds, sessionId, this.fence);
    this.cache.clearGrants();
    return groups;
  }

  async getCompaction(frameId: string): Promise<CompactionSummary | null> {
    const cached = this.cache.getCompaction(frameId);
    if (cached !== undefined) return cached;
    const summary = await readCompaction(this.ds, frameId);
    this.cache.keepCompaction(frameId, summary);
    return summary;
  }

  async listInbox(sessionId: string): Promise<InboxItem[]> {
    const snapshot = this.inboxSnapshot;
    this.inboxSnapshot = null;
    if (snapshot && snapshot.sessionId === sessionId && Date.now() - snapshot.at <= INBOX_SNAPSHOT_MS)
      return snapshot.items;
    this.lastLookAt = performance.now();
    return readQueuedInbox(this.ds, sessionId);
  }

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

  /**
   * The session's queued inbox as of this store's last commit (a one-statement commit reads it; a
   * transaction's fence statement reads it and the commit's own settlements are left out); null
   * before the first commit or after a failed one. The driver asks it after a turn ended: an empty
   * inbox at the turn's last commit means nothing more to do (what is queued later is found after
   * the release).
   */
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
      const written = await writeCommit(this.ds, sessionId, this.fence, mutations, events, usage);
      this.inboxSnapshot = { sessionId, at: Date.now(), items: written.inbox };
      this.lastCommitInbox = written.inbox;
      this.finishStop = written.stop;
      committed = written.events;
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
}
