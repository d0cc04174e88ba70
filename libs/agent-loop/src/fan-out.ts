/**
 * Running the calls of one assistant message: sequentially, or — when there are ≥2 and every one
 * is `concurrencySafe` — concurrently, bounded by `maxParallelCalls`. Ids were allocated in call
 * order when the rows were written; records are committed in call order whatever the completion
 * order.
 */
import type { CallEnd } from './call-end';
import type { HumanAnswer } from './ports';
import { offeredNames, roundTools } from './history';
import { cancelledRecord, mergeRecords, type CallRecord } from './records';
import { childController } from './signals';
import { prepareCall, runCall, type PreparedCall } from './tool-call';
import { toolStartEvent } from './tool-start';
import { commit, toolContext, type FrameContext } from './turn-context';
import { TERMINAL_TOOL_STATUSES, type Mutation, type SessionEventDraft, type ToolCallRow } from './types';

export type BatchEnd =
  { kind: 'continue' } | { kind: 'cancelled' } | { kind: 'parked'; toolCallId: string; requestId: string };

export interface BatchOptions {
  /** A human answer for one awaiting call (`resolvePendingCall`). */
  preset?: { toolCallId: string; answer: HumanAnswer };
  /**
   * The names offered in the round that produced the calls. Absent (recovery): a call that has not
   * started yet (`pending`) is checked against the offer recomputed now.
   */
  offered?: ReadonlySet<string>;
  /** The rows are new (not yet announced): announce each call's `tool_start` as it starts. */
  announceStart?: boolean;
}

export async function runBatch(fctx: FrameContext, rows: ToolCallRow[], options: BatchOptions = {}): Promise<BatchEnd> {
  const ctx = await toolContext(fctx);
  const offered =
    options.offered ?? (rows.some((r) => r.status === 'pending') ? offeredNames(await roundTools(fctx)) : undefined);
  const prepared = rows.map((row) => prepareCall(fctx, row, ctx, offered));
  const concurrent =
    prepared.length >= 2 && fctx.turn.deps.config.maxParallelCalls > 1 && prepared.every((p) => p.concurrencySafe);
  if (concurrent && options.announceStart)
    await commit(
      fctx.turn,
      [],
      rows.map((row) => toolStartEvent(fctx, row)),
    );
  return concurrent ? runConcurrent(fctx, prepared, options) : runSequential(fctx, prepared, options);
}

/** The preset answer applies to its own call, or travels down a still-open delegation. */
function presetFor(call: PreparedCall, options: BatchOptions): HumanAnswer | undefined {
  if (!options.preset) return undefined;
  return options.preset.toolCallId === call.row.id || call.row.childFrameId !== null
    ? options.preset.answer
    : undefined;
}

function presetCallId(call: PreparedCall, options: BatchOptions): string | undefined {
  return call.row.childFrameId !== null ? options.preset?.toolCallId : undefined;
}

async function record(fctx: FrameContext, rec: CallRecord): Promise<void> {
  await commit(fctx.turn, rec.mutations, rec.events);
  fctx.turn.recorded.push(rec.summary);
}

async function runSequential(fctx: FrameContext, calls: PreparedCall[], options: BatchOptions): Promise<BatchEnd> {
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i];
    if (fctx.signal.aborted) {
      await cancelCalls(
        fctx,
        calls.slice(i).map((c) => c.row.id),
      );
      return { kind: 'cancelled' };
    }
    if (options.announceStart) await commit(fctx.turn, [], [toolStartEvent(fctx, call.row)]);
    const end = await runCall(fctx, call, presetFor(call, options), presetCallId(call, options));
    switch (end.flow) {
      case 'continue':
        await record(fctx, end.record);
        break;
      case 'cancelled':
        await record(fctx, end.record);
        await cancelCalls(
          fctx,
          calls.slice(i + 1).map((c) => c.row.id),
        );
        return { kind: 'cancelled' };
      case 'parked':
        return { kind: 'parked', toolCallId: end.toolCallId, requestId: end.requestId };
    }
  }
  return { kind: 'continue' };
}

async function runConcurrent(fctx: FrameContext, calls: PreparedCall[], options: BatchOptions): Promise<BatchEnd> {
  const controller = childController(fctx.signal);
  const batchCtx: FrameContext = { ...fctx, signal: controller.signal };
  const ends: (CallEnd | null)[] = calls.map(() => null);
  let next = 0;
  let failure: { error: unknown } | null = null;
  const worker = async (): Promise<void> => {
    while (next < calls.length) {
      const i = next++;
      const call = calls[i];
      if (controller.signal.aborted) {
        ends[i] = { flow: 'cancelled', record: cancelledRecord(call.row) };
        continue;
      }
      try {
        const end = await runCall(batchCtx, call, presetFor(call, options), presetCallId(call, options));
        ends[i] = end;
        if (end.flow === 'cancelled') controller.abort();
      } catch (error) {
        failure ??= { error };
        controller.abort();
      }
    }
  };
  const width = Math.min(fctx.turn.deps.config.maxParallelCalls, calls.length);
  await Promise.all(Array.from({ length: width }, () => worker()));
  if (failure !== null) throw (failure as { error: unknown }).error;

  const cancelled = ends.some((e) => e?.flow === 'cancelled');
  const parked: string[] = [];
  for (let i = 0; i < calls.length; i++) {
    const end = ends[i] as CallEnd;
    if (end.flow === 'parked') {
      if (cancelled) parked.push(calls[i].row.id);
      continue;
    }
    await record(fctx, end.record);
  }
  if (cancelled) {
    // A sibling parked before another was cancelled: its subtree ends cancelled too.
    await cancelCalls(fctx, parked);
    return { kind: 'cancelled' };
  }
  const firstParked = ends.find((e): e is Extract<CallEnd, { flow: 'parked' }> => e?.flow === 'parked');
  return firstParked
    ? { kind: 'parked', toolCallId: firstParked.toolCallId, requestId: firstParked.requestId }
    : { kind: 'continue' };
}

/**
 * Mark calls cancelled (one commit), with everything still open below them: a delegation's
 * child frame is closed and its own unfinished calls cancelled, recursively.
 */
export async function cancelCalls(fctx: FrameContext, toolCallIds: string[]): Promise<void> {
  const mutations: Mutation[] = [];
  const events: SessionEventDraft[] = [];
  for (const id of toolCallIds) await collectCancel(fctx, id, mutations, events);
  await commit(fctx.turn, mutations, events);
}

async function collectCancel(
  fctx: FrameContext,
  toolCallId: string,
  mutations: Mutation[],
  events: SessionEventDraft[],
): Promise<void> {
  const { store } = fctx.turn.deps;
  const row = await store.getToolCall(toolCallId);
  if (!row || TERMINAL_TOOL_STATUSES.includes(row.status)) return;
  const extra: Mutation[] = [];
  const before: SessionEventDraft[] = [];
  if (row.childFrameId) {
    const child = await store.getFrame(row.childFrameId);
    if (child && child.status === 'active') {
      const parentFrame = await store.getFrame(row.frameId);
      for (const c of await store.listToolCalls(child.id)) await collectCancel(fctx, c.id, mutations, events);
      extra.push({ kind: 'closeFrame', frameId: child.id });
      before.push({
        type: 'agent_done',
        stack_id: child.id,
        parent_tool_call_id: row.id,
        agent_id: child.agentId,
        parent_agent_id: parentFrame?.agentId ?? fctx.agent.id,
        depth: child.depth,
        result_preview: 'Cancelled by user.',
      });
    }
  }
  const rec = cancelledRecord(row, { extra, before });
  const merged = mergeRecords([rec]);
  mutations.push(...merged.mutations);
  events.push(...merged.events);
  fctx.turn.recorded.push(rec.summary);
}
