/**
 * A sub-agent is a tool: `execute_task` (sync) / `execute_subtask` open a child frame and run a
 * normal loop in it as the child's own agent; `execute_task` mode async goes to the task port.
 */
import type { CallEnd } from './call-end';
import { stringArg } from './json';
import { cancelledRecord, doneRecord, failedRecord } from './records';
import { childController } from './signals';
import { preview } from './texts';
import { commit, nowIso, type FrameContext, type FrameOutcome } from './turn-context';
import type { FrameRow, SessionEventDraft, ToolCallRow } from './types';

/** Only task agents can be delegated to (list_agents lists exactly those). */
function unknownAgent(agentId: string, exists: boolean): string {
  return exists
    ? `\`${agentId}\` is not a task agent and cannot run as a sub-agent. Call list_agents for the task agents.`
    : `Unknown agent \`${agentId}\`. Call list_agents.`;
}

export function isAsyncTask(name: string, args: unknown): boolean {
  return name === 'execute_task' && stringArg(args, 'mode') === 'async';
}

export async function submitAsyncTask(fctx: FrameContext, row: ToolCallRow, args: unknown): Promise<CallEnd> {
  const { deps, session } = fctx.turn;
  const agentId = stringArg(args, 'agent_id');
  const prompt = stringArg(args, 'prompt');
  if (!agentId || !prompt)
    return { flow: 'continue', record: failedRecord(row, 'execute_task needs `agent_id` and `prompt`.') };
  if (!deps.tasks)
    return { flow: 'continue', record: failedRecord(row, 'Async tasks are not available here; use mode sync.') };
  const agent = await deps.catalog.getAgent(agentId, session.userId);
  if (!agent || agent.type !== 'task') {
    return { flow: 'continue', record: failedRecord(row, unknownAgent(agentId, agent !== null)) };
  }
  let receipt: { jobId: string };
  try {
    receipt = await deps.tasks.submitAsync({
      idempotencyKey: row.id,
      sessionId: session.id,
      userId: session.userId,
      source: session.source,
      parentToolCallId: row.id,
      scratchpadSessionId: session.scratchpadSessionId,
      agentId,
      prompt,
      title: stringArg(args, 'title'),
      description: stringArg(args, 'description'),
      client: stringArg(args, 'client'),
    });
  } catch (e) {
    // A refusal (the per-user cap, no scheduler) is the call's failure, in words the model can act on.
    return { flow: 'continue', record: failedRecord(row, e instanceof Error ? e.message : String(e)) };
  }
  return {
    flow: 'continue',
    record: doneRecord(
      row,
      `Task started in the background as job ${receipt.jobId} (agent ${agentId}). Its result will be delivered into this conversation as a task_completed call when it finishes.`,
    ),
  };
}

/** Open the child frame, run it, and turn its outcome into the parent call's record. */
export async function runSyncDelegation(fctx: FrameContext, row: ToolCallRow, args: unknown): Promise<CallEnd> {
  const { deps, session } = fctx.turn;
  const agentId = stringArg(args, 'agent_id');
  const prompt = stringArg(args, 'prompt');
  if (!agentId || !prompt) {
    return { flow: 'continue', record: failedRecord(row, `${row.name} needs \`agent_id\` and \`prompt\`.`) };
  }
  if (fctx.frame.depth + 1 > deps.config.maxDepth) {
    return {
      flow: 'continue',
      record: failedRecord(row, `Maximum sub-agent depth (${deps.config.maxDepth}) reached; do the work yourself.`),
    };
  }
  const agent = await deps.catalog.getAgent(agentId, session.userId);
  if (!agent || agent.type !== 'task') {
    return { flow: 'continue', record: failedRecord(row, unknownAgent(agentId, agent !== null)) };
  }

  const child: FrameRow = {
    id: deps.ids.newId(),
    sessionId: session.id,
    parentFrameId: fctx.frame.id,
    parentToolCallId: row.id,
    agentId: agent.id,
    depth: fctx.frame.depth + 1,
    status: 'active',
    clientPin: stringArg(args, 'client'),
  };
  await commit(
    fctx.turn,
    [
      { kind: 'updateToolCall', id: row.id, patch: { status: 'running', childFrameId: child.id } },
      { kind: 'openFrame', frame: child },
      {
        kind: 'appendMessage',
        message: {
          id: deps.ids.newId(),
          sessionId: session.id,
          frameId: child.id,
          role: 'agent',
          content: prompt,
          reasoningContent: null,
          isSynthetic: false,
          attachments: null,
          clientMessageId: null,
          inputTokens: null,
          outputTokens: null,
          createdAt: nowIso(fctx.turn),
        },
      },
    ],
    [
      {
        type: 'agent_start',
        stack_id: child.id,
        parent_tool_call_id: row.id,
        agent_id: agent.id,
        parent_agent_id: fctx.agent.id,
        depth: child.depth,
        prompt_preview: preview(prompt),
      },
    ],
  );
  const controller = childController(fctx.signal);
  const childCtx: FrameContext = {
    turn: fctx.turn,
    frame: child,
    agent,
    parentAgentId: fctx.agent.id,
    signal: controller.signal,
  };
  const outcome = await fctx.turn.runFrame(childCtx);
  return delegationEnd(fctx, { ...row, status: 'running', childFrameId: child.id }, child, outcome);
}

/**
 * The parent call's record for a child frame's outcome: closes the child frame, announces
 * `agent_done`, records the call. Used live and by recovery's cascade.
 */
export function delegationEnd(parent: FrameContext, row: ToolCallRow, child: FrameRow, outcome: FrameOutcome): CallEnd {
  const agentDone = (resultPreview: string): SessionEventDraft => ({
    type: 'agent_done',
    stack_id: child.id,
    parent_tool_call_id: row.id,
    agent_id: child.agentId,
    parent_agent_id: parent.agent.id,
    depth: child.depth,
    result_preview: preview(resultPreview),
  });
  const close = [{ kind: 'closeFrame' as const, frameId: child.id }];
  switch (outcome.kind) {
    case 'final':
      return {
        flow: 'continue',
        record: doneRecord(row, outcome.content, { extra: close, before: [agentDone(outcome.content)] }),
      };
    case 'exhausted': {
      const error = `Sub-agent ${child.agentId} used all ${outcome.rounds} tool rounds without a final answer.`;
      return { flow: 'continue', record: failedRecord(row, error, { extra: close, before: [agentDone(error)] }) };
    }
    case 'failed': {
      const error = `Sub-agent ${child.agentId} failed: ${outcome.error}`;
      return { flow: 'continue', record: failedRecord(row, error, { extra: close, before: [agentDone(error)] }) };
    }
    case 'idle': {
      const error = `Sub-agent ${child.agentId} produced no answer.`;
      return { flow: 'continue', record: failedRecord(row, error, { extra: close, before: [agentDone(error)] }) };
    }
    case 'cancelled':
      return {
        flow: 'cancelled',
        record: cancelledRecord(row, { extra: close, before: [agentDone('Cancelled by user.')] }),
      };
    case 'parked':
      return { flow: 'parked', toolCallId: outcome.toolCallId, requestId: outcome.requestId };
  }
}
