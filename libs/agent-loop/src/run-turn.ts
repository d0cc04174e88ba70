/**
 * The three entry points. Each one drives the session it is handed until an outcome; the caller
 * must hold the session's lease. A `LeaseLostError` (or any other store failure) from a commit
 * aborts every in-flight branch, nothing more is written, and the error is rethrown.
 */
import { compactAtTurnStart } from './compaction';
import { CallNotAwaitingHumanError, LoopInvariantError } from './errors';
import { finishTurn } from './finish';
import { runFrame } from './frame';
import { inboxEntry, userMessageEvent } from './injection';
import type { HumanAnswer, LoopDeps } from './ports';
import { continueSession, frameContext, resumeChild } from './recovery';
import { planRewind, type RewindPlan } from './rewind';
import { childController } from './signals';
import { commit, nowIso, type TurnContext } from './turn-context';
import type { Attachment, FrameRow, Mutation, NewMessage, SessionEventDraft, TurnOutcome } from './types';

export type TurnInput =
  /** A stored inbox item enters the conversation (its id becomes the chat row's id). */
  | { kind: 'inbox'; inboxId: string }
  /** Content handed in directly (tic, cron, tests). Synthetic rows are not echoed. */
  | {
      kind: 'message';
      content: string;
      messageId?: string;
      clientMessageId?: string;
      attachments?: Attachment[];
      isSynthetic?: boolean;
      role?: 'user' | 'agent';
    }
  /**
   * The turn's first input is already entered, by the caller's own fenced write under the lease it
   * drives with: its message row `messageId` in the root frame `frameId` (opened by that write when
   * the conversation had none), the inbox item settled, the turn state `running` named by the
   * message, its echo with the next seq — the first commit `runTurn` makes for an inbox item of a
   * finished conversation with nothing to recover, no rewind and no orphaned rows. The turn goes on
   * from there: compaction at turn start, then the root frame.
   */
  | { kind: 'entered'; messageId: string; frameId: string };

export interface RunTurnRequest {
  sessionId: string;
  input: TurnInput;
  /** /stop: aborting it cancels the turn (sticky through sub-agents). */
  signal?: AbortSignal;
}

export interface RecoverTurnRequest {
  sessionId: string;
  signal?: AbortSignal;
}

export interface ResolvePendingCallRequest {
  sessionId: string;
  /** The durable id of the `awaiting_human` call. */
  toolCallId: string;
  answer: HumanAnswer;
  signal?: AbortSignal;
}

export async function startTurn(deps: LoopDeps, sessionId: string, signal?: AbortSignal): Promise<TurnContext> {
  const abort = childController(signal ?? new AbortController().signal);
  return {
    deps,
    session: await deps.store.getSession(sessionId),
    signal: abort.signal,
    abort,
    dead: null,
    recorded: [],
    runFrame,
    resumeChild,
  };
}

async function guarded<T>(turn: TurnContext, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    turn.abort.abort();
    throw error;
  }
}

async function markRunning(turn: TurnContext): Promise<void> {
  if (turn.session.turnState === 'parked') {
    await commit(turn, [{ kind: 'setTurnState', sessionId: turn.session.id, state: 'running' }], []);
  }
}

/**
 * New input: first continue any unfinished turn of the session (so the new input never orphans
 * earlier input; if that ends cancelled or parked, the input is NOT entered and that outcome is
 * returned), mark orphaned trailing user rows failed, enter the input, compact the history if it
 * passed the threshold, run the root frame.
 * An inbox input that is no longer pending returns `idle`. An `entered` input skips all of that up
 * to the compaction: the caller made that first commit.
 */
export async function runTurn(deps: LoopDeps, request: RunTurnRequest): Promise<TurnOutcome> {
  const turn = await startTurn(deps, request.sessionId, request.signal);
  return guarded(turn, async () => {
    const { input } = request;
    if (input.kind === 'entered') return runRoot(turn, await enteredRoot(turn, input));
    if (turn.session.turnState !== 'finished') {
      await markRunning(turn);
      const previous = await finishTurn(turn, (await continueSession(turn)).outcome);
      if (previous.kind === 'cancelled' || previous.kind === 'parked') return previous;
      turn.recorded = [];
    }
    const { store, ids } = deps;
    const session = turn.session;
    const item =
      input.kind === 'inbox' ? (await store.listInbox(session.id)).find((i) => i.id === input.inboxId) : undefined;
    if (input.kind === 'inbox' && !item) return { kind: 'idle' };
    const frames = await store.listActiveFrames(session.id);
    const mutations: Mutation[] = [];
    const events: SessionEventDraft[] = [];
    let plan: RewindPlan | null = null;
    let root: FrameRow | undefined = frames.find((f) => f.depth === 0);
    if (!root) {
      root = {
        id: ids.newId(),
        sessionId: session.id,
        parentFrameId: null,
        parentToolCallId: null,
        agentId: session.agentId,
        depth: 0,
        status: 'active',
        clientPin: null,
      };
      mutations.push({ kind: 'openFrame', frame: root });
    } else {
      const rows = await store.listMessages(root.id);
      // A regenerate or an edit: the rows it replaces are superseded in the commit that starts the turn.
      if (item?.rewind) plan = planRewind(rows, item.rewind);
      if (item?.rewind && plan) {
        if (plan.superseded.length > 0) mutations.push({ kind: 'supersedeMessages', messageIds: plan.superseded });
        events.push({
          type: 'messages_superseded',
          from_message_id: item.rewind.messageId,
          ...(plan.answerAgain ? { keeps_message: true } : {}),
        });
      }
      // Orphans: user rows the model never answered (their turn was stopped or failed) — except
      // the one a regenerate answers again.
      const gone = new Set(plan?.superseded ?? []);
      const live = rows.filter((m) => !gone.has(m.id));
      for (let i = live.length - 1; i >= 0 && live[i].role !== 'assistant'; i--) {
        if (live[i] !== plan?.answerAgain) mutations.push({ kind: 'markMessageFailed', messageId: live[i].id });
      }
    }
    if (item?.rewind && !plan) {
      // The conversation moved on since the rewind was asked for: it is dropped, and said so.
      await commit(
        turn,
        [{ kind: 'discardInbox', inboxId: item.id }],
        [{ type: 'message_discarded', message_id: item.id, client_message_id: item.clientMessageId }],
      );
      return { kind: 'idle' };
    }
    let turnId: string;
    if (item && plan?.answerAgain) {
      // Regenerate: no new row; the turn is named by the inbox item that asked for it.
      mutations.push({ kind: 'consumeInbox', inboxId: item.id });
      turnId = item.id;
    } else if (item) {
      const entry = inboxEntry(turn, root.id, item);
      mutations.push(...entry.mutations);
      if (!entry.message.isSynthetic) events.push(userMessageEvent(entry.message));
      turnId = entry.message.id;
    } else if (input.kind === 'message') {
      const message: NewMessage = {
        id: input.messageId ?? ids.newId(),
        sessionId: session.id,
        frameId: root.id,
        role: input.role ?? 'user',
        content: input.content,
        reasoningContent: null,
        isSynthetic: input.isSynthetic ?? false,
        attachments: input.attachments ?? null,
        clientMessageId: input.clientMessageId ?? null,
        inputTokens: null,
        outputTokens: null,
        createdAt: nowIso(turn),
      };
      mutations.push({ kind: 'appendMessage', message });
      if (!message.isSynthetic) events.push(userMessageEvent(message));
      turnId = message.id;
    } else return { kind: 'idle' };
    mutations.push({ kind: 'setTurnState', sessionId: session.id, state: 'running', turnId });
    // The input is committed (and echoed) first, the agent loaded after: the echo waits for
    // nothing the message does not need (the agent's catalog, memory and MCP lookups take longer
    // than the commit). Steered input that arrives meanwhile enters at the first round boundary.
    await commit(turn, mutations, events);
    return runRoot(turn, root);
  });
}

/** After the first commit: compaction at turn start (if the history passed the threshold), then the root frame. */
async function runRoot(turn: TurnContext, root: FrameRow): Promise<TurnOutcome> {
  const fctx = await frameContext(turn, root);
  if ((await compactAtTurnStart(fctx)).kind === 'cancelled') return finishTurn(turn, { kind: 'cancelled' });
  return finishTurn(turn, await runFrame(fctx));
}

/**
 * The root frame of a turn whose first input the caller entered (`entered`): the session's turn
 * must be running and named by that message, the frame its active root. Anything else is a broken
 * promise of the caller, not a state to repair here.
 */
async function enteredRoot(turn: TurnContext, input: { messageId: string; frameId: string }): Promise<FrameRow> {
  const { session } = turn;
  if (session.turnState !== 'running' || session.turnId !== input.messageId)
    throw new LoopInvariantError(
      `entered input ${input.messageId}: the session's turn is ${session.turnState} (${session.turnId ?? 'no id'})`,
    );
  const root = (await turn.deps.store.listActiveFrames(session.id)).find((f) => f.id === input.frameId);
  if (!root || root.depth !== 0) throw new LoopInvariantError(`entered input ${input.messageId}: no active root frame`);
  return root;
}

/** No new input: continue what was interrupted (recovery). `idle` when the turn is finished. */
export async function recoverTurn(deps: LoopDeps, request: RecoverTurnRequest): Promise<TurnOutcome> {
  const turn = await startTurn(deps, request.sessionId, request.signal);
  return guarded(turn, async () => {
    if (turn.session.turnState === 'finished') return { kind: 'idle' };
    await markRunning(turn);
    return finishTurn(turn, (await continueSession(turn)).outcome);
  });
}

/**
 * A human answered after the live wait ended (the turn parked, or the worker restarted): apply
 * the answer to the `awaiting_human` call — approved → run it with the gate skipped; rejected →
 * record the rejection; answered → the question's result; cancelled → the turn ends cancelled —
 * then continue the turn. Throws `CallNotAwaitingHumanError` if the call is not waiting.
 */
export async function resolvePendingCall(deps: LoopDeps, request: ResolvePendingCallRequest): Promise<TurnOutcome> {
  const turn = await startTurn(deps, request.sessionId, request.signal);
  return guarded(turn, async () => {
    const row = await deps.store.getToolCall(request.toolCallId);
    const frame = row ? await deps.store.getFrame(row.frameId) : null;
    if (!row || row.sessionId !== request.sessionId || row.status !== 'awaiting_human' || frame?.status !== 'active') {
      throw new CallNotAwaitingHumanError(request.toolCallId);
    }
    await markRunning(turn);
    const { outcome } = await continueSession(turn, { toolCallId: row.id, answer: request.answer });
    return finishTurn(turn, outcome);
  });
}
