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
  /**
   * The model's answer that produced the rows (its message, the rows `pending`, its events), not
   * yet committed: it is committed with the `tool_start` of the call(s) that start first — one
   * commit instead of two, and still before any call runs.
   */
  answer?: { mutations: Mutation[]; events: SessionEventDraft[] };
}

export async function runBatch(fctx: FrameContext, rows: ToolCallRow[], options: BatchOptions = {}): Promise<BatchEnd> {
  let prepared: PreparedCall[];
  try {
    const ctx = await toolContext(fctx);
    const offered =
      options.offered ?? (rows.some((r) => r.status === 'pending') ? offeredNames(await roundTools(fctx)) : undefined);
    prepared = rows.map((row) => prepareCall(fctx, row, ctx, offered));
  } catch (error) {
    // The answer is durable before anything fails on it: recovery finds its calls.
    if (options.answer) await commit(fctx.turn, options.answer.mutations, options.answer.events);
    throw error;
  }
  const concurrent =
    prepared.length >= 2 && fctx.turn.deps.config.maxParallelCalls > 1 && prepared.every((p) => p.concurrencySafe);
  // A concurrent batch announces every start at once; a sequential one its first call's here and
  // each next call's with the record of the one before (see runSequential).
  const starts =
    options.announceStart && !fctx.signal.aborted
      ? (concurrent ? rows : rows.slice(0, 1)).map((row) => toolStartEvent(fctx, row))
      : [];
  if (options.answer || starts.length > 0)
    await commit(fctx.turn, options.answer?.mutations ?? [], [...(options.answer?.events ?? []), ...starts]);
  return concurrent
    ? runConcurrent(fctx, prepared, options)
    : runSequential(fctx, prepared, options, starts.length > 0);
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

/** `after`: events committed with the record (the next call's `tool_start`). */
async function record(fctx: FrameContext, rec: CallRecord, after: SessionEventDraft[] = []): Promise<void> {
  await commit(fctx.turn, rec.mutations, after.length > 0 ? [...rec.events, ...after] : rec.events);
  fctx.turn.recorded.push(rec.summary);
}

/** `firstAnnounced`: the first call's `tool_start` is committed already (with the answer). */
async function runSequential(
  fctx: FrameContext,
  calls: PreparedCall[],
  options: BatchOptions,
  firstAnnounced = false,
): Promise<BatchEnd> {
  let announced = firstAnnounced;
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i];
    if (fctx.signal.aborted) {
      await cancelCalls(
        fctx,
        calls.slice(i).map((c) => c.row.id),
      );
      return { kind: 'cancelled' };
    }
    if (options.announceStart && !announced) await commit(fctx.turn, [], [toolStartEvent(fctx, call.row)]);
    const end = await runCall(fctx, call, presetFor(call, options), presetCallId(call, options));
    switch (end.flow) {
      case 'continue': {
        // The next call starts right after this record unless the turn was stopped: its
        // `tool_start` rides with the record (one commit instead of two).
        const next = calls[i + 1];
        announced = options.announceStart === true && next !== undefined && !fctx.signal.aborted;
        await record(fctx, end.record, announced ? [toolStartEvent(fctx, next.row)] : []);
        break;
      }
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
