import { randomUUID } from 'node:crypto';
import type { Mutation, NewToolCall, SessionEventDraft } from '@skald/agent-loop';
import { SHAPE_PARTS, type ShapePart, type UsageRow } from '../loop-adapters/session-store/one-statement-commit';
import { plainMessage } from './plain-message';

/** What a shape's commit refers to: a session with a message, three calls of it and two queued inbox items. */
export interface ShapeContext {
  sessionId: string;
  userId: string;
  frameId: string;
  messageId: string;
  callIds: readonly string[];
  inboxIds: readonly string[];
}

/**
 * Every shape a store can send, from {@link SHAPE_PARTS}: each subset of its parts except one call
 * updated together with several (`u`, `U`), and usage rows without a message (the store takes a
 * call's row only with its message's commit).
 */
export function allShapes(): ShapePart[][] {
  const parts = Object.keys(SHAPE_PARTS) as ShapePart[];
  const shapes: ShapePart[][] = [];
  for (let bits = 0; bits < 1 << parts.length; bits++) {
    const shape = parts.filter((_, i) => bits & (1 << i));
    if (shape.includes('u') && shape.includes('U')) continue;
    if (shape.includes('l') && !shape.includes('m')) continue;
    shapes.push(shape);
  }
  return shapes;
}

/**
 * A commit of `shape` against `ctx`, with `rows` rows in each part that may have several (1 or 2;
 * `U` updates rows + 1 calls). Settling inbox items is a regenerate's `consumeInbox` (an item
 * entering brings its message, so it is `i` and `m`).
 */
export function commitOfShape(
  shape: readonly ShapePart[],
  ctx: ShapeContext,
  rows: 1 | 2,
): { mutations: Mutation[]; events: SessionEventDraft[]; usage: UsageRow[] } {
  const mutations: Mutation[] = [];
  const events: SessionEventDraft[] = [];
  const usage: UsageRow[] = [];
  const n = Array.from({ length: rows }, (_, i) => i);
  const messageIds: string[] = [];
  if (shape.includes('i')) for (const i of n) mutations.push({ kind: 'consumeInbox', inboxId: ctx.inboxIds[i] });
  if (shape.includes('f'))
    for (const i of n)
      mutations.push({
        kind: 'openFrame',
        frame: {
          id: randomUUID(),
          sessionId: ctx.sessionId,
          parentFrameId: ctx.frameId,
          parentToolCallId: ctx.callIds[i],
          agentId: `agent ${i}`,
          depth: 1,
          status: 'active',
          clientPin: i === 0 ? null : 'pin',
        },
      });
  if (shape.includes('e'))
    for (const i of n) events.push({ type: 'thinking', message_id: 'm', content: `e${i} \u0000` });
  if (shape.includes('m'))
    for (const i of n) {
      const message = plainMessage(ctx.sessionId, ctx.frameId, 'assistant', `m${i} \ud800`, '2026-01-02T03:04:05.678Z');
      messageIds.push(message.id);
      mutations.push({ kind: 'appendMessage', message });
    }
  if (shape.includes('c'))
    for (const i of n)
      mutations.push({
        kind: 'createToolCall',
        call: pendingReadFile(ctx, ctx.messageId, randomUUID(), 10 + i, `call_${i}`),
      });
  const updates = shape.includes('u') ? 1 : shape.includes('U') ? rows + 1 : 0;
  for (let i = 0; i < updates; i++)
    mutations.push({
      kind: 'updateToolCall',
      id: ctx.callIds[i],
      patch: i === 0 ? { status: 'done', result: 'a result \u0000', resultType: 'text' } : { status: 'running' },
    });
  if (shape.includes('t'))
    mutations.push({ kind: 'setTurnState', sessionId: ctx.sessionId, state: 'running', turnId: messageIds[0] ?? null });
  if (shape.includes('l')) for (const messageId of messageIds) usage.push(usageOf(ctx, messageId));
  return { mutations, events, usage };
}

/** The usage row of a round's answered model call, for `messageId` in the context's session and frame. */
export function usageOf(s: { sessionId: string; userId: string; frameId: string }, messageId: string): UsageRow {
  return {
    userId: s.userId,
    sessionId: s.sessionId,
    frameId: s.frameId,
    messageId,
    purpose: 'round',
    client: 'sim',
    model: 'm',
    inputTokens: 10,
    outputTokens: 5,
    cachedInputTokens: 0,
    estimated: false,
    costUsd: 0.001,
  };
}

/** A `read_file` call as the model's answer creates it: pending, no result. */
export function pendingReadFile(
  s: { sessionId: string; frameId: string },
  messageId: string,
  id: string,
  index: number,
  llmCallId: string,
): NewToolCall {
  return {
    id,
    sessionId: s.sessionId,
    frameId: s.frameId,
    messageId,
    index,
    llmCallId,
    name: 'read_file',
    argumentsText: '{"path":"a"}',
    status: 'pending',
    result: null,
    resultType: null,
    requestId: null,
    childFrameId: null,
  };
}
