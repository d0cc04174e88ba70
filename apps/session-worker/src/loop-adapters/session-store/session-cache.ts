import type {
  CompactionSummary,
  ListMessagesOptions,
  MessageRow,
  Mutation,
  NewMessage,
  ScratchpadNote,
  ToolCallPatch,
  ToolCallRow,
} from '@skald/agent-loop';

/** A frame's rows as the lease holder last knew them: every message (failed and superseded too) and tool call, in `ord` order. */
export interface CarriedFrame {
  messages: MessageRow[];
  toolCalls: ToolCallRow[];
}

/**
 * What the lease holder has read of its session, kept up to date with its own commits: while it
 * holds the epoch no one else writes these rows (every other writer of chat history, tool calls,
 * grants, scratchpad and compaction holds the lease too), so a round reads them from memory
 * instead of Postgres. Filled by the store's first read of each (or the turn's start read, or as
 * empty by the commit that opens a frame); `apply` runs only after a commit
 * succeeded, and a failed or doubtful commit empties the cache (the next read goes to Postgres).
 * A frame's rows are kept whole and in `ord` order; reads answer copies.
 */
export class SessionCache {
  private readonly messages = new Map<string, MessageRow[]>();
  private readonly toolCalls = new Map<string, ToolCallRow[]>();
  private readonly grants = new Map<string, string[]>();
  private readonly scratchpads = new Map<string, ScratchpadNote[]>();
  private readonly compactions = new Map<string, CompactionSummary | null>();

  clear(): void {
    this.messages.clear();
    this.toolCalls.clear();
    this.grants.clear();
    this.scratchpads.clear();
    this.compactions.clear();
  }

  /** The frame's messages as `listMessages` answers them, or null when not cached (or the boundary is unknown). */
  listMessages(frameId: string, options: ListMessagesOptions): MessageRow[] | null {
    const all = this.messages.get(frameId);
    if (!all) return null;
    let from = 0;
    if (options.afterMessageId) {
      const i = all.findIndex((m) => m.id === options.afterMessageId);
      if (i < 0) return null;
      from = i + 1;
    }
    const out: MessageRow[] = [];
    for (let i = from; i < all.length; i++)
      if (options.includeFailed || all[i].status === 'ok') out.push(copyMessage(all[i]));
    return out;
  }

  /** Keeps every message of the frame (as read with `includeFailed`, in order). */
  keepMessages(frameId: string, rows: MessageRow[]): void {
    this.messages.set(frameId, rows.map(copyMessage));
  }

  listToolCalls(frameId: string): ToolCallRow[] | null {
    return this.toolCalls.get(frameId)?.map((c) => ({ ...c })) ?? null;
  }

  keepToolCalls(frameId: string, rows: ToolCallRow[]): void {
    this.toolCalls.set(
      frameId,
      rows.map((c) => ({ ...c })),
    );
  }

  getGrants(key: string): string[] | null {
    return this.grants.get(key)?.slice() ?? null;
  }

  keepGrants(key: string, groups: string[]): void {
    this.grants.set(key, groups.slice());
  }

  clearGrants(): void {
    this.grants.clear();
  }

  getScratchpad(id: string): ScratchpadNote[] | null {
    return this.scratchpads.get(id)?.map((n) => ({ ...n })) ?? null;
  }

  keepScratchpad(id: string, notes: ScratchpadNote[]): void {
    this.scratchpads.set(
      id,
      notes.map((n) => ({ ...n })),
    );
  }

  /** `undefined`: not cached; null: cached as none. */
  getCompaction(frameId: string): CompactionSummary | null | undefined {
    const c = this.compactions.get(frameId);
    return c === undefined ? undefined : c && { ...c };
  }

  keepCompaction(frameId: string, summary: CompactionSummary | null): void {
    this.compactions.set(frameId, summary && { ...summary });
  }

  /** Each frame whose messages and tool calls are both cached: its rows (copies), for the next lease (HistoryCarry). */
  history(): Map<string, CarriedFrame> {
    const out = new Map<string, CarriedFrame>();
    for (const [frameId, messages] of this.messages) {
      const calls = this.toolCalls.get(frameId);
      if (calls) out.set(frameId, { messages: messages.map(copyMessage), toolCalls: calls.map((c) => ({ ...c })) });
    }
    return out;
  }

  /** The committed mutations, as the rows they wrote would read back. */
  apply(mutations: Mutation[]): void {
    // A frame this commit opened had no rows before it (its id is new: the insert would have
    // failed otherwise), and only this commit's mutations can have written rows of it: it is
    // cached as empty first, then those mutations apply to it like any other frame's.
    for (const m of mutations)
      if (m.kind === 'openFrame') {
        if (!this.messages.has(m.frame.id)) this.messages.set(m.frame.id, []);
        if (!this.toolCalls.has(m.frame.id)) this.toolCalls.set(m.frame.id, []);
        if (!this.compactions.has(m.frame.id)) this.compactions.set(m.frame.id, null);
      }
    for (const m of mutations) {
      switch (m.kind) {
        case 'appendMessage':
        case 'enterInbox':
          this.messages.get(m.message.frameId)?.push(messageRowOf(m.message));
          break;
        case 'markMessageFailed':
          for (const rows of this.messages.values())
            for (const r of rows) if (r.id === m.messageId) r.status = 'failed';
          break;
        case 'supersedeMessages': {
          const ids = new Set(m.messageIds);
          for (const rows of this.messages.values()) for (const r of rows) if (ids.has(r.id)) r.status = 'superseded';
          break;
        }
        case 'createToolCall': {
          const { staleReasks, ...c } = m.call;
          this.toolCalls.get(c.frameId)?.push({
            ...c,
            previewHash: c.previewHash ?? null,
            judgedLanding: c.judgedLanding ? [...c.judgedLanding] : null,
            ...(staleReasks ? { staleReasks } : {}),
          });
          break;
        }
        case 'updateToolCall':
          for (const rows of this.toolCalls.values()) {
            const i = rows.findIndex((r) => r.id === m.id);
            if (i >= 0) rows[i] = patched(rows[i], m.patch);
          }
          break;
        case 'setScratchpad':
          this.scratchpads.delete(m.scratchpadSessionId);
          break;
        case 'grantTools':
          this.grants.clear();
          break;
        case 'setCompaction':
          this.compactions.delete(m.summary.frameId);
          break;
        case 'discardInbox':
        case 'consumeInbox':
        case 'openFrame':
        case 'closeFrame':
        case 'setTodos':
        case 'setTurnState':
          break;
        default: {
          const never: never = m;
          void never;
          this.clear();
        }
      }
    }
  }
}

function copyMessage(m: MessageRow): MessageRow {
  return { ...m, attachments: m.attachments ? m.attachments.map((a) => ({ ...a })) : null };
}

/** A message row as `toMessage` reads it back after the insert. */
function messageRowOf(msg: NewMessage): MessageRow {
  return {
    id: msg.id,
    sessionId: msg.sessionId,
    frameId: msg.frameId,
    role: msg.role,
    content: msg.content,
    reasoningContent: msg.reasoningContent ?? null,
    status: msg.status ?? 'ok',
    isSynthetic: Boolean(msg.isSynthetic),
    attachments: msg.attachments ? msg.attachments.map((a) => ({ ...a })) : null,
    clientMessageId: msg.clientMessageId ?? null,
    inputTokens: msg.inputTokens ?? null,
    outputTokens: msg.outputTokens ?? null,
    costUsd: msg.costUsd ?? null,
    tokensEstimated: msg.tokensEstimated ?? false,
    llmClient: msg.llmClient ?? null,
    llmModel: msg.llmModel ?? null,
    createdAt: new Date(msg.createdAt).toISOString(),
  };
}

/** A tool call after `updateToolCall` (the columns the UPDATE sets that a ToolCallRow carries). */
function patched(row: ToolCallRow, p: ToolCallPatch): ToolCallRow {
  const out: ToolCallRow = { ...row, status: p.status };
  if (p.result !== undefined) out.result = p.result ?? null;
  if (p.resultType !== undefined) out.resultType = p.resultType ?? null;
  if (p.requestId !== undefined) out.requestId = p.requestId ?? null;
  if (p.childFrameId !== undefined) out.childFrameId = p.childFrameId ?? null;
  if (p.previewHash !== undefined) out.previewHash = p.previewHash ?? null;
  if (p.judgedLanding !== undefined) out.judgedLanding = p.judgedLanding ? [...p.judgedLanding] : null;
  if (p.staleReasks !== undefined && p.staleReasks !== null) {
    if (p.staleReasks) out.staleReasks = p.staleReasks;
    else delete out.staleReasks;
  }
  return out;
}
