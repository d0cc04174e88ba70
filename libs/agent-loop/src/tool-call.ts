/**
 * One tool call end to end (spec: handle_tool_call): working-directory injection → gate
 * (allow / deny → rejected / require → human) → execute → record. The row already exists
 * (`pending`, announced by `tool_start`); recovery enters here with the row's stored status.
 */
import type { CallEnd } from './call-end';
import { callRefusal, offerRefusal } from './call-checks';
import { delegationEnd, isAsyncTask, runSyncDelegation, submitAsyncTask } from './delegation';
import { approvalEvent, questionArgs, waitForHuman } from './human';
import { parseArguments } from './json';
import { isLoopTool } from './loop-tools';
import { injectWorkingDirectory } from './paths';
import { activateTools, listAgents, taskCompletedStub, updateScratchpad, writeTodos } from './plumbing';
import { isPreviewRefusal, LeaseLostError } from './ports';
import type {
  GateDecision,
  GateRequest,
  HumanAnswer,
  HumanEdit,
  HumanRequest,
  RestartHint,
  ToolContext,
  ToolExecution,
  ToolProgress,
  ToolResult,
  ToolRunOptions,
} from './ports';
import { cancelledRecord, doneRecord, failedRecord, interruptedRecord, rejectedRecord } from './records';
import { ABORTED, raceAbort } from './signals';
import {
  AUTO_DENY_REASON,
  editedCallNote,
  gateUnavailableMessage,
  humanUnavailableMessage,
  INTERRUPTED_DELEGATION_ERROR,
  rejectionMessage,
} from './texts';
import { commit, type FrameContext } from './turn-context';
import type { ToolCallRow } from './types';

/**
 * How often a call is asked again when the preview its human approved cannot be reproduced at
 * write time (the file changed). At most this many re-asks — one card plus this many per call —
 * then the call ends as `tool_error` naming the reason: a file that changes on every read cannot
 * spin approval cards.
 */
export const MAX_STALE_REASKS = 1;

export function staleLimitMessage(reason: string): string {
  return `${reason}; the preview could not be reproduced after ${MAX_STALE_REASKS + 1} approvals (the file keeps changing), so nothing was written and the user is not asked again`;
}

export interface PreparedCall {
  row: ToolCallRow;
  /** Effective arguments (working directory injected). */
  args: unknown;
  /** The tool set's execution (null for loop-owned tools). */
  exec: ToolExecution | null;
  concurrencySafe: boolean;
  restartHint: RestartHint;
  /** Why the call may not run at all (not offered to this agent this round); null when it may. */
  refusal: string | null;
  /** What the call's execution was built with (an edited call is built again with it). */
  ctx?: ToolContext;
}

function isSyncDelegation(name: string, args: unknown): boolean {
  return name === 'execute_subtask' || (name === 'execute_task' && !isAsyncTask(name, args));
}

/**
 * `offered`: the names the round offered; a `pending` call outside it is refused before anything
 * is built for it (the tool set never sees it).
 */
export function prepareCall(
  fctx: FrameContext,
  row: ToolCallRow,
  ctx: ToolContext,
  offered?: ReadonlySet<string>,
): PreparedCall {
  const refusal = callRefusal(row) ?? (offered && row.status === 'pending' ? offerRefusal(row.name, offered) : null);
  if (refusal !== null)
    return { row, args: null, exec: null, concurrencySafe: false, restartHint: 'reExecute', refusal };
  const args = injectWorkingDirectory(
    row.name,
    parseArguments(row.argumentsText),
    fctx.turn.session.runContext.workingDirectory,
  );
  if (isLoopTool(row.name)) {
    return {
      row,
      args,
      exec: null,
      concurrencySafe: row.name === 'list_agents' || isSyncDelegation(row.name, args),
      restartHint: 'reExecute',
      refusal: null,
    };
  }
  const exec = fctx.turn.deps.tools.build(
    { toolCallId: row.id, name: row.name, arguments: args, argumentsText: row.argumentsText },
    ctx,
  );
  return { row, args, exec, concurrencySafe: exec.concurrencySafe, restartHint: exec.restartHint, refusal: null, ctx };
}

/**
 * Drive one call from its stored status. `preset` is a human answer that arrived after the live
 * wait ended (`resolvePendingCall`): it is applied to an `awaiting_human` call without asking.
 */
export async function runCall(
  fctx: FrameContext,
  call: PreparedCall,
  preset?: HumanAnswer,
  presetCallId?: string,
): Promise<CallEnd> {
  const { row } = call;
  const refusal = call.refusal ?? callRefusal(row);
  if (refusal !== null) return { flow: 'continue', record: failedRecord(row, refusal) };
  if (row.status === 'awaiting_human') {
    return row.name === 'ask_user_clarification' ? askQuestion(fctx, call, preset) : askApproval(fctx, call, preset);
  }
  if (row.status === 'running') {
    if (row.childFrameId !== null) {
      const child = await fctx.turn.deps.store.getFrame(row.childFrameId);
      if (child && child.status === 'active') {
        // A sibling of a parked parallel batch: continue its subtree, then record it.
        const presetArg = preset ? { toolCallId: presetCallId ?? '', answer: preset } : undefined;
        return delegationEnd(fctx, row, child, await fctx.turn.resumeChild(fctx, child, presetArg));
      }
      // The child frame is gone (reaped or never opened): its result cannot arrive.
      return { flow: 'continue', record: failedRecord(row, INTERRUPTED_DELEGATION_ERROR) };
    }
    if (call.restartHint === 'markInterrupted') return { flow: 'continue', record: interruptedRecord(row) };
  }
  if (fctx.signal.aborted) return { flow: 'cancelled', record: cancelledRecord(row) };
  const { deps } = fctx.turn;
  let decision: GateDecision;
  try {
    decision = await deps.gate.check(gateRequest(fctx, call));
  } catch (error) {
    // The gate did not answer: the call was not run, and the turn goes on.
    if (error instanceof LeaseLostError) throw error;
    if (fctx.signal.aborted) return { flow: 'cancelled', record: cancelledRecord(row) };
    return { flow: 'continue', record: failedRecord(row, gateUnavailableMessage(errorText(error))) };
  }
  switch (decision.kind) {
    case 'allow':
      return execute(fctx, call, row.status === 'pending', decision.landing);
    case 'deny':
      return { flow: 'continue', record: rejectedRecord(row, decision.reason) };
    case 'require':
      return askApproval(fctx, call, undefined, false, decision.landing);
  }
}

function gateRequest(fctx: FrameContext, call: Pick<PreparedCall, 'row' | 'args'>): GateRequest {
  const { session } = fctx.turn;
  return {
    sessionId: session.id,
    userId: session.userId,
    source: session.source,
    agentId: fctx.agent.id,
    depth: fctx.frame.depth,
    toolCallId: call.row.id,
    name: call.row.name,
    arguments: call.args,
    runContext: session.runContext,
    securityGroup: session.securityGroup ?? null,
    autoDeny: session.autoDenyApprovals,
  };
}

/**
 * Ask the human to approve a call. `fresh`: the approved preview went stale, so ask under a new
 * request id even though the row has one. `judged`: where the gate has just judged the call to
 * land (its `require`); without it the row's stored landing stands.
 */
async function askApproval(
  fctx: FrameContext,
  call: PreparedCall,
  preset?: HumanAnswer,
  fresh = false,
  judged?: ReadonlyArray<string | null>,
): Promise<CallEnd> {
  const { row, args } = call;
  const { session, deps } = fctx.turn;
  if (session.autoDenyApprovals) return { flow: 'continue', record: rejectedRecord(row, AUTO_DENY_REASON) };
  const newRequest = fresh || row.requestId === null;
  const requestId = newRequest ? deps.ids.newId() : (row.requestId ?? deps.ids.newId());
  // The file hash the answer is about. A re-ask under the same request id keeps the stored one
  // (the request registered under that id shows that preview); a new request takes its own.
  let previewHash = row.previewHash ?? null;
  // The landing the approval binds the run to: the gate's new judgement when this is a new request,
  // else the one stored with the request (what its card shows), else (none stored) the new one.
  const stored = row.judgedLanding ?? null;
  const landing = (newRequest ? (judged ?? stored) : (stored ?? judged)) ?? null;
  let answer: HumanAnswer;
  if (preset) {
    answer = preset;
  } else {
    const computed = call.exec?.preview ? await call.exec.preview().catch(() => null) : null;
    // A refused write asks nobody. A re-ask under a request already registered goes on (that card
    // is live, the write itself refuses the path later), so no request is left unanswered.
    if (isPreviewRefusal(computed) && newRequest)
      return { flow: 'continue', record: failedRecord(row, computed.refused) };
    const preview = isPreviewRefusal(computed) ? null : computed;
    if (newRequest) previewHash = preview?.baseHash ?? null;
    const hashPatch = previewHash !== (row.previewHash ?? null) ? { previewHash } : {};
    const reaskPatch = row.staleReasks ? { staleReasks: row.staleReasks } : {};
    const landingPatch = sameLanding(landing, stored) ? {} : { judgedLanding: landing };
    const landsAt = landing !== null ? (deps.gate.landsAt?.(gateRequest(fctx, call), landing) ?? null) : null;
    const request: HumanRequest = {
      kind: 'approval',
      requestId,
      sessionId: session.id,
      userId: session.userId,
      source: session.source,
      toolCallId: row.id,
      toolName: row.name,
      arguments: args,
      preview,
      ...(landsAt !== null ? { landsAt } : {}),
      gate: (({ agentId, securityGroup, runContext }) => ({ agentId, securityGroup, runContext }))(
        gateRequest(fctx, call),
      ),
    };
    const unregistered = await prepareHuman(fctx, request);
    if (unregistered !== null) return { flow: 'continue', record: failedRecord(row, unregistered) };
    await commit(
      fctx.turn,
      [
        {
          kind: 'updateToolCall',
          id: row.id,
          patch: { status: 'awaiting_human', requestId, ...hashPatch, ...reaskPatch, ...landingPatch },
        },
      ],
      [approvalEvent(row, requestId, args, preview, landsAt)],
    );
    answer = await waitForHuman(fctx, request);
  }
  switch (answer.kind) {
    case 'approved': {
      const approved = { ...call, row: { ...row, requestId, previewHash, judgedLanding: landing } };
      if (answer.edit) return runEdited(fctx, approved, answer.edit);
      return execute(fctx, approved, false, landing ?? undefined);
    }
    case 'rejected':
      return { flow: 'continue', record: rejectedRecord(row, rejectionMessage(answer.note)) };
    case 'answered':
      // An approval is never granted by free text: treat it as a rejection with that note.
      return { flow: 'continue', record: rejectedRecord(row, rejectionMessage(answer.answer)) };
    case 'cancelled':
      return { flow: 'cancelled', record: cancelledRecord(row) };
    case 'park':
      return { flow: 'parked', toolCallId: row.id, requestId };
  }
}

/**
 * A call the human approved with edited arguments: built again from them and judged by the gate
 * again where its paths land (the approval service judged the edit as written; a Deny here ends
 * the call rejected, never run). Allow or Require: it runs, the human's edit being the approval.
 * Its result, whatever it is, begins with the note that a human edited it and how.
 */
async function runEdited(fctx: FrameContext, call: PreparedCall, edit: HumanEdit): Promise<CallEnd> {
  const { row } = call;
  const note = editedCallNote(edit.diff);
  if (call.exec === null || call.ctx === undefined)
    return { flow: 'continue', record: failedRecord(row, `${note}\n\nthis tool's calls cannot be run edited`) };
  const args = injectWorkingDirectory(row.name, edit.arguments, fctx.turn.session.runContext.workingDirectory);
  let decision: GateDecision;
  try {
    decision = await fctx.turn.deps.gate.check(gateRequest(fctx, { row, args }));
  } catch (error) {
    if (error instanceof LeaseLostError) throw error;
    if (fctx.signal.aborted) return { flow: 'cancelled', record: cancelledRecord(row) };
    return { flow: 'continue', record: failedRecord(row, `${note}\n\n${gateUnavailableMessage(errorText(error))}`) };
  }
  if (decision.kind === 'deny')
    return { flow: 'continue', record: rejectedRecord(row, `${note}\n\n${decision.reason}`) };
  const exec = fctx.turn.deps.tools.build(
    { toolCallId: row.id, name: row.name, arguments: args, argumentsText: JSON.stringify(edit.arguments) },
    call.ctx,
  );
  // The approved preview's file hash binds the write only while it is the same file.
  const samePath = pathOf(args) === pathOf(call.args);
  const edited: PreparedCall = {
    ...call,
    args,
    exec: notedExecution(exec, note),
    row: { ...row, previewHash: samePath ? row.previewHash : null },
  };
  return execute(fctx, edited, false, decision.landing);
}

function pathOf(args: unknown): unknown {
  return args && typeof args === 'object' && !Array.isArray(args)
    ? (args as Record<string, unknown>)['path']
    : undefined;
}

/** The execution with `note` as the first lines of its result or error (a stale write stays as it is). */
function notedExecution(exec: ToolExecution, note: string): ToolExecution {
  return {
    concurrencySafe: exec.concurrencySafe,
    restartHint: exec.restartHint,
    ...(exec.preview ? { preview: () => exec.preview?.() ?? Promise.resolve(null) } : {}),
    stop: () => exec.stop(),
    run: async (signal, onProgress, options) => {
      const r = await exec.run(signal, onProgress, options);
      if (r.ok) return { ...r, content: `${note}\n\n${r.content}` };
      return r.stale ? r : { ...r, error: `${note}\n\n${r.error}` };
    },
  };
}

async function askQuestion(fctx: FrameContext, call: PreparedCall, preset?: HumanAnswer): Promise<CallEnd> {
  const { row } = call;
  const { session, deps } = fctx.turn;
  const q = questionArgs(call.args);
  if (!q) return { flow: 'continue', record: failedRecord(row, 'ask_user_clarification needs a `question`.') };
  if (session.autoDenyApprovals) {
    return {
      flow: 'continue',
      record: failedRecord(row, 'No user can answer in this unattended session; continue with your best judgement.'),
    };
  }
  const requestId = row.requestId ?? deps.ids.newId();
  let answer: HumanAnswer;
  if (preset) {
    answer = preset;
  } else {
    const request: HumanRequest = {
      kind: 'question',
      requestId,
      sessionId: session.id,
      userId: session.userId,
      source: session.source,
      toolCallId: row.id,
      title: q.title,
      question: q.question,
      suggestedAnswers: q.suggestedAnswers,
    };
    const unregistered = await prepareHuman(fctx, request);
    if (unregistered !== null) return { flow: 'continue', record: failedRecord(row, unregistered) };
    await commit(
      fctx.turn,
      [{ kind: 'updateToolCall', id: row.id, patch: { status: 'awaiting_human', requestId } }],
      [
        {
          type: 'agent_question',
          request_id: requestId,
          tool_call_id: row.id,
          title: q.title,
          question: q.question,
          suggested_answers: q.suggestedAnswers,
        },
      ],
    );
    answer = await waitForHuman(fctx, request);
  }
  switch (answer.kind) {
    case 'answered':
      return { flow: 'continue', record: doneRecord(row, answer.answer) };
    case 'approved':
      return { flow: 'continue', record: doneRecord(row, 'The user acknowledged the question without an answer.') };
    case 'rejected':
      return {
        flow: 'continue',
        record: doneRecord(row, `The user declined to answer.${answer.note ? ` Note: ${answer.note}` : ''}`),
      };
    case 'cancelled':
      return { flow: 'cancelled', record: cancelledRecord(row) };
    case 'park':
      return { flow: 'parked', toolCallId: row.id, requestId };
  }
}

/**
 * `fromPending`: the gate allowed a call stored `pending` (no human was asked). Such a call whose
 * tool re-runs safely after a crash (`reExecute`: reads, `write_file`, `edit_file`) is not marked
 * `running` first: recovery runs a `pending` call exactly as a `running` one of that hint (again),
 * so the write would change nothing a crash leaves behind (RELIABILITY.md I2 is about the calls
 * that may not run twice, `markInterrupted`, which are still marked before they start). A call
 * that a human approved is marked: its stored status (`awaiting_human`) would otherwise ask again.
 */
async function execute(
  fctx: FrameContext,
  call: PreparedCall,
  fromPending = false,
  judgedLanding?: ReadonlyArray<string | null>,
): Promise<CallEnd> {
  const { row, args } = call;
  if (fctx.signal.aborted) return { flow: 'cancelled', record: cancelledRecord(row) };
  if (call.exec === null) {
    switch (row.name) {
      case 'update_scratchpad':
        return { flow: 'continue', record: updateScratchpad(fctx, row, args) };
      case 'write_todos':
        return { flow: 'continue', record: writeTodos(fctx, row, args) };
      case 'activate_tools':
        return { flow: 'continue', record: await activateTools(fctx, row, args) };
      case 'list_agents':
        return { flow: 'continue', record: await listAgents(fctx, row) };
      case 'ask_user_clarification':
        return askQuestion(fctx, call);
      case 'execute_task':
      case 'execute_subtask':
        return isAsyncTask(row.name, args) ? submitAsyncTask(fctx, row, args) : runSyncDelegation(fctx, row, args);
      default:
        return { flow: 'continue', record: taskCompletedStub(row) };
    }
  }
  if (!(fromPending && call.restartHint === 'reExecute'))
    await commit(fctx.turn, [{ kind: 'updateToolCall', id: row.id, patch: { status: 'running' } }], []);
  const result = await runExecution(fctx, row, call.exec, {
    ...(row.previewHash !== null && row.previewHash !== undefined ? { expectedBaseHash: row.previewHash } : {}),
    ...(judgedLanding ? { judgedLanding } : {}),
  });
  if (result === ABORTED) return { flow: 'cancelled', record: cancelledRecord(row) };
  if (!result.ok && result.stale) {
    // The file changed after the preview the human approved: nothing was written. Ask again with
    // a fresh preview under a new request id (the approved one is spent), a bounded number of times.
    const reasks = row.staleReasks ?? 0;
    if (reasks >= MAX_STALE_REASKS)
      return { flow: 'continue', record: failedRecord(row, staleLimitMessage(result.error)) };
    return askApproval(fctx, { ...call, row: { ...row, staleReasks: reasks + 1 } }, undefined, true);
  }
  return result.ok
    ? {
        flow: 'continue',
        record: doneRecord(row, result.content, {
          ...(result.resultType !== undefined ? { resultType: result.resultType } : {}),
          ...(result.changedPaths !== undefined ? { changedPaths: result.changedPaths } : {}),
          ...(result.openedPaths !== undefined ? { openedPaths: result.openedPaths } : {}),
        }),
      }
    : {
        flow: 'continue',
        record: result.interrupted ? interruptedRecord(row, result.error) : failedRecord(row, result.error),
      };
}

function sameLanding(a: ReadonlyArray<string | null> | null, b: ReadonlyArray<string | null> | null): boolean {
  return a === b || (a !== null && b !== null && a.length === b.length && a.every((p, i) => p === b[i]));
}

/** Registers a human request; the sentence the call fails with when that is impossible, else null. */
async function prepareHuman(fctx: FrameContext, request: HumanRequest): Promise<string | null> {
  try {
    await fctx.turn.deps.human.prepare?.(request);
    return null;
  } catch (error) {
    if (error instanceof LeaseLostError) throw error;
    return humanUnavailableMessage(errorText(error));
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Run an execution; on abort call `stop()` and return at once. A throw counts as a failure. */
async function runExecution(
  fctx: FrameContext,
  row: ToolCallRow,
  exec: ToolExecution,
  options: ToolRunOptions,
): Promise<ToolResult | typeof ABORTED> {
  const { deps, session } = fctx.turn;
  const onAbort = (): void => exec.stop();
  fctx.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const onProgress = (p: ToolProgress): void =>
      deps.events.ephemeral({
        type: 'tool_progress',
        session_id: session.id,
        tool_call_id: row.id,
        stream: p.stream,
        chunk: p.chunk,
      });
    const running = (
      Object.keys(options).length > 0 ? exec.run(fctx.signal, onProgress, options) : exec.run(fctx.signal, onProgress)
    ).catch((error: unknown): ToolResult => ({
      ok: false,
      error: error instanceof Error ? error.message : String(error),
    }));
    return await raceAbort(running, fctx.signal);
  } finally {
    fctx.signal.removeEventListener('abort', onAbort);
  }
}
