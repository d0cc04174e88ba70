/**
 * One round of a frame: boundary checks (cancellation, mid-turn injection) → one
 * model call → either the final answer, or the assistant message with its calls (rows written
 * `pending` in call order) and the batch run, which announces each call's `tool_start` as it starts.
 */
import { runBatch } from './fan-out';
import { buildFrameMessages, offeredNames, roundTools } from './history';
import { drainSteer } from './injection';
import { callModel } from './llm-call';
import { commit, isRoot, nowIso, type FrameContext, type FrameOutcome } from './turn-context';
import type { Mutation, NewMessage, SessionEventDraft, ToolCallRow } from './types';

export type RoundResult =
  | { kind: 'final'; outcome: Extract<FrameOutcome, { kind: 'final' }> }
  | { kind: 'again' }
  | { kind: 'cancelled' }
  | { kind: 'failed'; error: string; code?: string }
  | { kind: 'parked'; toolCallId: string; requestId: string };

export async function runRound(fctx: FrameContext): Promise<RoundResult> {
  const { deps, session } = fctx.turn;
  if (fctx.signal.aborted) return { kind: 'cancelled' };
  const root = isRoot(fctx);
  if (root) await drainSteer(fctx);
  const tools = await roundTools(fctx);
  const messageId = deps.ids.newId();
  const offered = offeredNames(tools);
  const call = await callModel(fctx, (cc) => buildFrameMessages(fctx, cc, offered), tools, messageId);
  switch (call.kind) {
    case 'cancelled':
      return { kind: 'cancelled' };
    case 'failed':
      return { kind: 'failed', error: call.error, ...(call.code ? { code: call.code } : {}) };
    case 'response':
      break;
  }
  const res = call.response;
  const message: NewMessage = {
    id: messageId,
    sessionId: session.id,
    frameId: fctx.frame.id,
    role: 'assistant',
    content: res.content,
    reasoningContent: res.reasoningContent,
    isSynthetic: false,
    attachments: null,
    clientMessageId: null,
    inputTokens: res.usage?.inputTokens ?? null,
    outputTokens: res.usage?.outputTokens ?? null,
    costUsd: res.usage?.costUsd ?? null,
    tokensEstimated: res.usage?.estimated ?? false,
    llmClient: call.client.name,
    llmModel: res.model ?? null,
    createdAt: nowIso(fctx.turn),
  };
  const usage = res.usage ? { input_tokens: res.usage.inputTokens, output_tokens: res.usage.outputTokens } : {};

  if (res.toolCalls.length === 0) {
    const truncated = res.finishReason === 'length';
    const mutations: Mutation[] = [{ kind: 'appendMessage', message }];
    const events: SessionEventDraft[] = [];
    if (root) {
      mutations.push({ kind: 'setTurnState', sessionId: session.id, state: 'finished' });
      events.push({
        type: 'done',
        message_id: messageId,
        stack_id: fctx.frame.id,
        content: res.content,
        ...usage,
        ...(res.reasoningContent ? { reasoning_content: res.reasoningContent } : {}),
      });
      if (truncated) {
        events.push({ type: 'truncated', ...(res.usage ? { output_tokens: res.usage.outputTokens } : {}) });
      }
    }
    await commit(fctx.turn, mutations, events);
    return {
      kind: 'final',
      outcome: {
        kind: 'final',
        messageId,
        content: res.content,
        reasoningContent: res.reasoningContent,
        inputTokens: message.inputTokens,
        outputTokens: message.outputTokens,
        truncated,
        replayed: false,
      },
    };
  }

  const rows: ToolCallRow[] = res.toolCalls.map((tc, index) => {
    const id = deps.ids.newId();
    return {
      id,
      sessionId: session.id,
      frameId: fctx.frame.id,
      messageId,
      index,
      llmCallId: tc.id || `call_${id}`,
      name: tc.name,
      argumentsText: tc.argumentsText,
      status: 'pending',
      result: null,
      resultType: null,
      requestId: null,
      childFrameId: null,
    };
  });
  const events: SessionEventDraft[] = [];
  // A round's text or reasoning is stored with it: what streamed as token deltas is told again here.
  if (res.content.trim() !== '' || res.reasoningContent) {
    events.push({
      type: 'thinking',
      message_id: messageId,
      content: res.content,
      ...(res.reasoningContent ? { reasoning_content: res.reasoningContent } : {}),
      ...usage,
    });
  }
  // The answer is committed by the batch, with the first call's `tool_start`, before any call runs.
  const batch = await runBatch(fctx, rows, {
    offered: offeredNames(tools),
    announceStart: true,
    answer: {
      mutations: [
        { kind: 'appendMessage', message },
        ...rows.map((call): Mutation => ({ kind: 'createToolCall', call })),
      ],
      events,
    },
  });
  switch (batch.kind) {
    case 'continue':
      return { kind: 'again' };
    case 'cancelled':
      return { kind: 'cancelled' };
    case 'parked':
      return { kind: 'parked', toolCallId: batch.toolCallId, requestId: batch.requestId };
  }
}
