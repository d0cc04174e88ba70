import { LeaseLostError } from '../ports';
import type { ListMessagesOptions, SessionStore } from '../ports';
import type {
  CompactionSummary,
  FrameRow,
  GrantScope,
  InboxItem,
  MessageRow,
  Mutation,
  ScratchpadNote,
  SessionEventDraft,
  SessionInfo,
  TodoItem,
  ToolCallRow,
} from '../types';

export type StoredEvent = SessionEventDraft & { session_id: string; seq: number };

export type StoredInboxItem = InboxItem & { state: 'pending' | 'entered' | 'discarded' };

/** Everything the in-memory store holds; plain JSON (what `snapshot()` returns). */
export interface StoreState {
  sessions: SessionInfo[];
  frames: FrameRow[];
  messages: MessageRow[];
  toolCalls: ToolCallRow[];
  scratchpads: Record<string, ScratchpadNote[]>;
  todos: Record<string, TodoItem[]>;
  grants: Record<string, string[]>;
  compactions: CompactionSummary[];
  inbox: StoredInboxItem[];
  events: StoredEvent[];
}

/** Thrown by a commit after the configured crash point: the process "died". */
export class SimulatedCrash extends Error {
  constructor(readonly commitNumber: number) {
    super(`simulated crash before commit #${commitNumber}`);
    this.name = 'SimulatedCrash';
  }
}

/** Thrown by a commit the store refuses for what it holds (as Postgres refuses a value): nothing applied. */
export class RejectedCommit extends Error {
  constructor(readonly commitNumber: number) {
    super(`commit #${commitNumber} rejected by the store`);
    this.name = 'RejectedCommit';
  }
}

function emptyState(): StoreState {
  return {
    sessions: [],
    frames: [],
    messages: [],
    toolCalls: [],
    scratchpads: {},
    todos: {},
    grants: {},
    compactions: [],
    inbox: [],
    events: [],
  };
}

const clone = <T>(v: T): T => structuredClone(v);

function grantKey(scope: GrantScope): string {
  return scope.kind === 'session' ? `session:${scope.sessionId}` : `frame:${scope.frameId}`;
}

/**
 * The store port in memory, with the Postgres store's semantics: each commit applies every
 * mutation and appends every event (contiguous per-session `seq`) or nothing; invalid
 * mutations (unknown rows, closing a closed frame, duplicate ids) reject the whole commit.
 */
export class InMemoryStore implements SessionStore {
  private state: StoreState;
  /** Successful commits so far. */
  commitCount = 0;
  private crashAfter: number | null = null;
  private crashed = false;
  private leaseLost = false;
  /** Every successful commit, for assertions: the mutation kinds and event types. */
  readonly log: { mutations: Mutation[]; events: SessionEventDraft[] }[] = [];

  constructor(state?: StoreState) {
    this.state = state ? clone(state) : emptyState();
  }

  /** A fresh store from a serialised snapshot (nothing shared with the original). */
  static fromSnapshot(json: string): InMemoryStore {
    return new InMemoryStore(JSON.parse(json) as StoreState);
  }

  /** The committed state, serialised. */
  snapshot(): string {
    return JSON.stringify(this.state);
  }

  /** Read-only view of the committed state (a copy). */
  view(): StoreState {
    return clone(this.state);
  }

  /** Commits after the k-th successful one throw `SimulatedCrash` and apply nothing. */
  crashAfterCommits(k: number | null): void {
    this.crashAfter = k;
  }

  /** The first commit matching the predicate (and every later one) throws `SimulatedCrash`. */
  crashOn(predicate: ((mutations: Mutation[], events: SessionEventDraft[]) => boolean) | null): void {
    this.crashPredicate = predicate;
  }

  private crashPredicate: ((mutations: Mutation[], events: SessionEventDraft[]) => boolean) | null = null;

  /** Commits matching the predicate throw `RejectedCommit` (every time); others apply. */
  rejectWhen(predicate: ((mutations: Mutation[], events: SessionEventDraft[]) => boolean) | null): void {
    this.rejectPredicate = predicate;
  }

  private rejectPredicate: ((mutations: Mutation[], events: SessionEventDraft[]) => boolean) | null = null;

  /** Every later commit throws `LeaseLostError`. */
  loseLease(): void {
    this.leaseLost = true;
  }

  // ---- seeding helpers (tests only) ----

  addSession(session: SessionInfo): void {
    this.state.sessions.push(clone(session));
  }

  addInbox(item: InboxItem): void {
    this.state.inbox.push({ ...clone(item), state: 'pending' });
  }

  updateSession(sessionId: string, patch: Partial<SessionInfo>): void {
    const s = this.mustSession(this.state, sessionId);
    Object.assign(s, clone(patch));
  }

  events(sessionId?: string): StoredEvent[] {
    return clone(this.state.events.filter((e) => sessionId === undefined || e.session_id === sessionId));
  }

  // ---- reads ----

  async getSession(sessionId: string): Promise<SessionInfo> {
    return clone(this.mustSession(this.state, sessionId));
  }

  async listActiveFrames(sessionId: string): Promise<FrameRow[]> {
    const frames = this.state.frames.filter((f) => f.sessionId === sessionId && f.status === 'active');
    return clone(
      frames
        .map((f, i) => ({ f, i }))
        .sort((a, b) => a.f.depth - b.f.depth || a.i - b.i)
        .map((x) => x.f),
    );
  }

  async getFrame(frameId: string): Promise<FrameRow | null> {
    const f = this.state.frames.find((x) => x.id === frameId);
    return f ? clone(f) : null;
  }

  async listMessages(frameId: string, options: ListMessagesOptions = {}): Promise<MessageRow[]> {
    let rows = this.state.messages.filter((m) => m.frameId === frameId);
    if (options.afterMessageId) {
      const idx = rows.findIndex((m) => m.id === options.afterMessageId);
      rows = idx >= 0 ? rows.slice(idx + 1) : rows;
    }
    if (!options.includeFailed) rows = rows.filter((m) => m.status === 'ok' || m.status === undefined);
    return clone(rows);
  }

  async listToolCalls(frameId: string): Promise<ToolCallRow[]> {
    return clone(this.state.toolCalls.filter((c) => c.frameId === frameId));
  }

  async getToolCall(toolCallId: string): Promise<ToolCallRow | null> {
    const c = this.state.toolCalls.find((x) => x.id === toolCallId);
    return c ? clone(c) : null;
  }

  async getScratchpad(scratchpadSessionId: string): Promise<ScratchpadNote[]> {
    return clone(this.state.scratchpads[scratchpadSessionId] ?? []);
  }

  async getTodos(frameId: string): Promise<TodoItem[]> {
    return clone(this.state.todos[frameId] ?? []);
  }

  async getGrants(scope: GrantScope): Promise<string[]> {
    return clone(this.state.grants[grantKey(scope)] ?? []);
  }

  async getCompaction(frameId: string): Promise<CompactionSummary | null> {
    const c = this.state.compactions.find((x) => x.frameId === frameId);
    return c ? clone(c) : null;
  }

  async listInbox(sessionId: string): Promise<InboxItem[]> {
    return clone(
      this.state.inbox
        .filter((i) => i.sessionId === sessionId && i.state === 'pending')
        .map(({ state: _state, ...item }) => item),
    );
  }

  inboxState(id: string): StoredInboxItem['state'] | undefined {
    return this.state.inbox.find((i) => i.id === id)?.state;
  }

  // ---- the one write ----

  async commit(sessionId: string, mutations: Mutation[], events: SessionEventDraft[]): Promise<void> {
    await Promise.resolve();
    if (this.leaseLost) throw new LeaseLostError();
    if (
      this.crashed ||
      (this.crashAfter !== null && this.commitCount >= this.crashAfter) ||
      (this.crashPredicate !== null && this.crashPredicate(mutations, events))
    ) {
      this.crashed = true;
      throw new SimulatedCrash(this.commitCount + 1);
    }
    if (this.rejectPredicate?.(mutations, events)) throw new RejectedCommit(this.commitCount + 1);
    const next = clone(this.state);
    this.mustSession(next, sessionId);
    for (const m of mutations) this.apply(next, sessionId, clone(m));
    let seq = next.events.filter((e) => e.session_id === sessionId).length;
    for (const e of events) next.events.push({ ...clone(e), session_id: sessionId, seq: ++seq });
    this.state = next;
    this.commitCount += 1;
    this.log.push({ mutations: clone(mutations), events: clone(events) });
  }

  private mustSession(state: StoreState, sessionId: string): SessionInfo {
    const s = state.sessions.find((x) => x.id === sessionId);
    if (!s) throw new Error(`unknown session ${sessionId}`);
    return s;
  }

  private apply(s: StoreState, sessionId: string, m: Mutation): void {
    const fail = (msg: string): never => {
      throw new Error(`invalid mutation ${m.kind}: ${msg}`);
    };
    switch (m.kind) {
      case 'appendMessage':
      case 'enterInbox': {
        const msg = m.message;
        if (msg.sessionId !== sessionId) fail('foreign session');
        if (s.messages.some((x) => x.id === msg.id)) fail(`duplicate message ${msg.id}`);
        if (!s.frames.some((f) => f.id === msg.frameId)) fail(`unknown frame ${msg.frameId}`);
        if (m.kind === 'enterInbox') {
          const item = s.inbox.find((i) => i.id === m.inboxId);
          if (!item || item.state !== 'pending') fail(`inbox item ${m.inboxId} is not pending`);
          item!.state = 'entered';
        }
        s.messages.push({ ...msg, status: msg.status ?? 'ok' });
        return;
      }
      case 'markMessageFailed': {
        const msg = s.messages.find((x) => x.id === m.messageId) ?? fail(`unknown message ${m.messageId}`);
        msg.status = 'failed';
        return;
      }
      case 'supersedeMessages': {
        for (const id of m.messageIds) {
          const msg = s.messages.find((x) => x.id === id) ?? fail(`unknown message ${id}`);
          msg.status = 'superseded';
        }
        return;
      }
      case 'discardInbox': {
        const item = s.inbox.find((i) => i.id === m.inboxId);
        if (!item || item.state !== 'pending') fail(`inbox item ${m.inboxId} is not pending`);
        item!.state = 'discarded';
        return;
      }
      case 'consumeInbox': {
        const item = s.inbox.find((i) => i.id === m.inboxId);
        if (!item || item.state !== 'pending') fail(`inbox item ${m.inboxId} is not pending`);
        item!.state = 'entered';
        return;
      }
      case 'createToolCall': {
        if (s.toolCalls.some((c) => c.id === m.call.id)) fail(`duplicate tool call ${m.call.id}`);
        if (!s.messages.some((x) => x.id === m.call.messageId)) fail(`unknown message ${m.call.messageId}`);
        s.toolCalls.push(m.call);
        return;
      }
      case 'updateToolCall': {
        const c = s.toolCalls.find((x) => x.id === m.id) ?? fail(`unknown tool call ${m.id}`);
        Object.assign(c, m.patch);
        return;
      }
      case 'openFrame': {
        if (s.frames.some((f) => f.id === m.frame.id)) fail(`duplicate frame ${m.frame.id}`);
        s.frames.push(m.frame);
        return;
      }
      case 'closeFrame': {
        const f = s.frames.find((x) => x.id === m.frameId) ?? fail(`unknown frame ${m.frameId}`);
        if (f.status !== 'active') fail(`frame ${m.frameId} closed twice`);
        f.status = 'closed';
        return;
      }
      case 'setScratchpad': {
        const notes = s.scratchpads[m.scratchpadSessionId] ?? [];
        const idx = notes.findIndex((n) => n.key === m.key);
        if (m.value === null) {
          if (idx >= 0) notes.splice(idx, 1);
        } else if (idx >= 0) notes[idx] = { key: m.key, value: m.value };
        else notes.push({ key: m.key, value: m.value });
        s.scratchpads[m.scratchpadSessionId] = notes;
        return;
      }
      case 'setTodos':
        s.todos[m.frameId] = m.todos;
        return;
      case 'grantTools': {
        const key = grantKey(m.scope);
        const set = s.grants[key] ?? [];
        for (const g of m.groups) if (!set.includes(g)) set.push(g);
        s.grants[key] = set;
        return;
      }
      case 'setCompaction': {
        s.compactions = s.compactions.filter((c) => c.frameId !== m.summary.frameId);
        s.compactions.push(m.summary);
        return;
      }
      case 'setTurnState': {
        const session = this.mustSession(s, m.sessionId);
        session.turnState = m.state;
        if (m.turnId) session.turnId = m.turnId;
        return;
      }
    }
  }
}
