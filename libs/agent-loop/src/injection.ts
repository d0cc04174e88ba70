/** Mid-turn injection and the inbox side of /stop. */
import { commit, nowIso, type FrameContext, type TurnContext } from './turn-context';
import type { InboxItem, Mutation, NewMessage, NewToolCall, SessionEventDraft } from './types';

export function inboxMessage(turn: TurnContext, frameId: string, item: InboxItem): NewMessage {
  return inboxMessageAt(turn.session.id, frameId, item, nowIso(turn));
}

/**
 * The user row an inbox item (not a system delivery) becomes when it enters frame `frameId` at
 * `createdAt` (ISO): the same row `inboxEntry` writes, for a caller that enters the turn's first
 * input itself (`TurnInput` `entered`).
 */
export function inboxMessageAt(sessionId: string, frameId: string, item: InboxItem, createdAt: string): NewMessage {
  return {
    id: item.id,
    sessionId,
    frameId,
    role: 'user',
    content: item.content,
    reasoningContent: null,
    isSynthetic: item.isSynthetic === true,
    attachments: item.attachments,
    clientMessageId: item.clientMessageId,
    inputTokens: null,
    outputTokens: null,
    createdAt,
  };
}

export function userMessageEvent(message: NewMessage): SessionEventDraft {
  return {
    type: 'user_message',
    message_id: message.id,
    ...(message.clientMessageId !== null ? { client_message_id: message.clientMessageId } : {}),
    content: message.content,
    ...(message.attachments && message.attachments.length > 0 ? { attachments: message.attachments } : {}),
  };
}

/**
 * The rows an inbox item becomes when it enters the conversation: a user message with its echo
 * (a synthetic one, such as a tic's prompt, without), or — for a system delivery — a synthetic
 * assistant message carrying one completed call of the injected tool (`task_completed`,
 * `read_notification`), which the model reads as any tool result. Synthetic rows are not echoed.
 */
export function inboxEntry(
  turn: TurnContext,
  frameId: string,
  item: InboxItem,
): { message: NewMessage; mutations: Mutation[]; events: SessionEventDraft[] } {
  const tr = item.toolResult;
  if (!tr) {
    const message = inboxMessage(turn, frameId, item);
    return {
      message,
      mutations: [{ kind: 'enterInbox', inboxId: item.id, message }],
      events: message.isSynthetic ? [] : [userMessageEvent(message)],
    };
  }
  const message: NewMessage = {
    ...inboxMessage(turn, frameId, item),
    role: 'assistant',
    content: '',
    isSynthetic: true,
    attachments: null,
  };
  const callId = turn.deps.ids.newId();
  const call: NewToolCall = {
    id: callId,
    sessionId: turn.session.id,
    frameId,
    messageId: message.id,
    index: 0,
    llmCallId: `call_${callId.replace(/-/g, '').slice(0, 24)}`,
    name: tr.toolName,
    argumentsText: tr.argumentsText,
    status: 'done',
    result: tr.result,
    resultType: 'text',
    requestId: null,
    childFrameId: null,
  };
  return {
    message,
    mutations: [
      { kind: 'enterInbox', inboxId: item.id, message },
      { kind: 'createToolCall', call },
    ],
    events: [],
  };
}

/**
 * The inbox item that starts the next turn of a finished conversation: an `interrupt` first (the
 * user stopped the turn to say it), else the oldest. Waiting `steer` items — a finished task's
 * delivery kept by the stop among them — enter at that turn's first round boundary.
 */
export function nextTurnItem(items: readonly InboxItem[]): InboxItem | undefined {
  return items.find((i) => i.delivery === 'interrupt') ?? items[0];
}

/** At a round boundary of the root frame: every waiting `steer` item enters as its own row,
 *  with its echo. `queue` items wait for the next turn. */
export async function drainSteer(fctx: FrameContext): Promise<void> {
  const items = (await fctx.turn.deps.store.listInbox(fctx.turn.session.id)).filter((i) => i.delivery === 'steer');
  if (items.length === 0) return;
  const mutations: Mutation[] = [];
  const events: SessionEventDraft[] = [];
  for (const item of items) {
    const entry = inboxEntry(fctx.turn, fctx.frame.id, item);
    mutations.push(...entry.mutations);
    events.push(...entry.events);
  }
  await commit(fctx.turn, mutations, events);
}

/**
 * /stop: the user's messages that had not entered are discarded (kept, announced), except
 * `interrupt` items, which start the next turn. System deliveries (a finished async task's
 * `task_completed`, a notification) are never discarded: they stay queued and enter the next turn.
 */
export async function discardInbox(turn: TurnContext): Promise<{ mutations: Mutation[]; events: SessionEventDraft[] }> {
  const items = (await turn.deps.store.listInbox(turn.session.id)).filter(
    (i) => i.delivery !== 'interrupt' && !i.toolResult,
  );
  return {
    mutations: items.map((i): Mutation => ({ kind: 'discardInbox', inboxId: i.id })),
    events: items.map((i): SessionEventDraft => ({
      type: 'message_discarded',
      message_id: i.id,
      client_message_id: i.clientMessageId,
    })),
  };
}
