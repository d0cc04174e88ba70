/**
 * Restart recovery (spec 001 "Restart recovery"): make the stored history well-formed, then run
 * a normal loop on it.
 * 1. Reap an interrupted parallel batch (≥2 active frames at one depth): fail the spawning calls,
 *    close the frames (deliberately lossy).
 * 2. Resolve the deepest frame's non-terminal calls (running → re-run unless `markInterrupted`;
 *    awaiting_human → asked again with the same request id; cancelled / rejected never re-run).
 * 3. Un-wedge a child that finished but never reported: its stored answer is the result.
 * 4. Cascade to the root, each frame running as its own agent.
 */
import { delegationEnd } from './delegation';
import { cancelCalls, runBatch, type BatchOptions } from './fan-out';
import { expectMemoryQuery } from './history';
import { childController } from './signals';
import { preview, REAPED_BATCH_ERROR } from './texts';
import { commit, loadAgent, type FrameContext, type FrameOutcome, type TurnContext } from './turn-context';
import { TERMINAL_TOOL_STATUSES, type FrameRow, type Mutation, type SessionEventDraft } from './types';
import { failedRecord, interruptedRecord } from './records';

export async function frameContext(turn: TurnContext, frame: FrameRow): Promise<FrameContext> {
  const parent = frame.parentFrameId ? await turn.deps.store.getFrame(frame.parentFrameId) : null;
  await expectMemoryQuery(turn, frame);
  return {
    turn,
    frame,
    agent: await loadAgent(turn, frame.agentId),
    parentAgentId: parent?.agentId ?? null,
    signal: childController(turn.signal).signal,
  };
}

export async function reapParallelBatches(turn: TurnContext): Promise<void> {
  const { store } = turn.deps;
  for (;;) {
    const frames = await store.listActiveFrames(turn.session.id);
    const byDepth = new Map<number, FrameRow[]>();
    for (const f of frames) byDepth.set(f.depth, [...(byDepth.get(f.depth) ?? []), f]);
    const depth = [...byDepth.keys()].sort((a, b) => a - b).find((d) => (byDepth.get(d) ?? []).length >= 2);
    if (depth === undefined) return;
    const mutations: Mutation[] = [];
    const events: SessionEventDraft[] = [];
    const settled = new Set<string>();
    const reap = (frame: FrameRow, parentAgentId: string): Promise<void> =>
      reapFrame(turn, frames, frame, parentAgentId, { mutations, events, settled });
    for (const frame of byDepth.get(depth) ?? []) {
      const parent = frame.parentFrameId ? await store.getFrame(frame.parentFrameId) : null;
      await reap(frame, parent?.agentId ?? frame.agentId);
    }
    await commit(turn, mutations, events);
  }
}

async function reapFrame(
  turn: TurnContext,
  active: FrameRow[],
  frame: FrameRow,
  parentAgentId: string,
  out: { mutations: Mutation[]; events: SessionEventDraft[]; settled: Set<string> },
): Promise<void> {
  const { mutations, events, settled } = out;
  for (const child of active.filter((f) => f.parentFrameId === frame.id)) {
    await reapFrame(turn, active, child, frame.agentId, out);
  }
  // The reaped frame's own unfinished calls are settled too, so nothing shows as still running.
  for (const call of await turn.deps.store.listToolCalls(frame.id)) {
    if (TERMINAL_TOOL_STATUSES.includes(call.status) || settled.has(call.id)) continue;
    settled.add(call.id);
    const rec =
      call.status === 'running' && call.childFrameId === null
        ? interruptedRecord(call)
        : failedRecord(call, REAPED_BATCH_ERROR);
    mutations.push(...rec.mutations);
    events.push(...rec.events);
  }
  mutations.push({ kind: 'closeFrame', frameId: frame.id });
  const row = frame.parentToolCallId ? await turn.deps.store.getToolCall(frame.parentToolCallId) : null;
  if (row && !TERMINAL_TOOL_STATUSES.includes(row.status) && !settled.has(row.id)) {
    settled.add(row.id);
    const rec = failedRecord(row, REAPED_BATCH_ERROR, {
      before: [
        {
          type: 'agent_done',
          stack_id: frame.id,
          parent_tool_call_id: row.id,
          agent_id: frame.agentId,
          parent_agent_id: parentAgentId,
          depth: frame.depth,
          result_preview: preview(REAPED_BATCH_ERROR),
        },
      ],
    });
    mutations.push(...rec.mutations);
    events.push(...rec.events);
    turn.recorded.push(rec.summary);
  }
}

/** `TurnContext.resumeChild`: continue a child frame that is still active below a running
 *  delegation call of `parent` (a parked parallel batch), with the parent's signal. */
export async function resumeChild(
  parent: FrameContext,
  child: FrameRow,
  preset?: BatchOptions['preset'],
): Promise<FrameOutcome> {
  const ctx = await frameContext(parent.turn, child);
  return resumeFrame({ ...ctx, signal: childController(parent.signal).signal }, preset ? { preset } : {});
}

/** Resolve a frame's unfinished calls, then finish it: from its stored answer when it already
 *  has one, otherwise by running its round loop. */
async function resumeFrame(fctx: FrameContext, options: BatchOptions = {}): Promise<FrameOutcome> {
  const { store } = fctx.turn.deps;
  const open = (await store.listToolCalls(fctx.frame.id)).filter((c) => !TERMINAL_TOOL_STATUSES.includes(c.status));
  if (open.length > 0) {
    const end = await runBatch(fctx, open, options);
    switch (end.kind) {
      case 'continue':
        break;
      case 'cancelled':
        return { kind: 'cancelled' };
      case 'parked':
        return { kind: 'parked', toolCallId: end.toolCallId, requestId: end.requestId };
    }
  }
  const messages = await store.listMessages(fctx.frame.id);
  const last = messages[messages.length - 1];
  if (!last) return { kind: 'idle' };
  if (last.role === 'assistant') {
    const calls = await store.listToolCalls(fctx.frame.id);
    if (!calls.some((c) => c.messageId === last.id)) {
      return {
        kind: 'final',
        messageId: last.id,
        content: last.content,
        reasoningContent: last.reasoningContent,
        inputTokens: last.inputTokens,
        outputTokens: last.outputTokens,
        truncated: false,
        replayed: true,
      };
    }
  }
  return fctx.turn.runFrame(fctx);
}

/**
 * Continue the session from its deepest active frame (or from the frame of the call a human
 * just answered) up to the root. Returns the root frame's outcome (null root: no frame at all).
 */
export async function continueSession(
  turn: TurnContext,
  preset?: BatchOptions['preset'],
): Promise<{ outcome: FrameOutcome; root: FrameRow | null }> {
  const { store } = turn.deps;
  // A parked batch (every sibling waiting or finished) is continued, not reaped: only an
  // interruption (the turn was `running`) loses a parallel batch.
  if (turn.session.turnState !== 'parked') await reapParallelBatches(turn);
  const frames = await store.listActiveFrames(turn.session.id);
  if (frames.length === 0) return { outcome: { kind: 'idle' }, root: null };
  let start = frames[frames.length - 1];
  if (preset) {
    const call = await store.getToolCall(preset.toolCallId);
    start = frames.find((f) => f.id === call?.frameId) ?? start;
  }
  let fctx = await frameContext(turn, start);
  let outcome = await resumeFrame(fctx, preset ? { preset } : {});
  while (fctx.frame.parentToolCallId !== null && fctx.frame.parentFrameId !== null) {
    if (outcome.kind === 'parked') return { outcome, root: null };
    const parentFrame = await store.getFrame(fctx.frame.parentFrameId);
    const row = await store.getToolCall(fctx.frame.parentToolCallId);
    if (!parentFrame || !row) throw new Error(`frame ${fctx.frame.id} has no parent call`);
    const parent = await frameContext(turn, parentFrame);
    const end = delegationEnd(parent, row, fctx.frame, outcome);
    if (end.flow === 'parked') return { outcome, root: null };
    await commit(turn, end.record.mutations, end.record.events);
    turn.recorded.push(end.record.summary);
    fctx = parent;
    if (end.flow === 'cancelled') {
      const open = (await store.listToolCalls(fctx.frame.id)).filter((c) => !TERMINAL_TOOL_STATUSES.includes(c.status));
      await cancelCalls(
        fctx,
        open.map((c) => c.id),
      );
      outcome = { kind: 'cancelled' };
      continue;
    }
    outcome = await resumeFrame(fctx);
  }
  return { outcome, root: fctx.frame };
}
