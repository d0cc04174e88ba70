import type { ChatApprovalOutcome, ChatMessageDto, ToolCallStatus } from '@skald/contracts';
import type { Item, ToolStatus } from '../chat-items';

/** The size of one history page (`GET /{source}/messages?limit=`). */
export const HISTORY_PAGE = 50;

const TOOL_STATUS: Record<ToolCallStatus, ToolStatus> = {
  pending: 'running',
  running: 'running',
  awaiting_human: 'awaiting',
  done: 'done',
  failed: 'error',
  rejected: 'rejected',
  cancelled: 'cancelled',
  interrupted: 'cancelled',
};

/**
 * The screen items of REST history rows, keyed exactly as the live events key them (`user:`,
 * `msg:`, `tool:` + id), so an event replayed after the page folds into the row it shows instead
 * of doubling it. Tool calls of past answers are cards like today's, collapsed.
 */
export function historyItems(rows: readonly ChatMessageDto[]): Item[] {
  const items: Item[] = [];
  for (const m of rows) {
    if (m.role === 'user') {
      items.push({
        kind: 'user',
        key: `user:${m.id}`,
        content: m.content,
        ...(m.attachments && m.attachments.length > 0 ? { attachments: m.attachments } : {}),
      });
      continue;
    }
    if (m.content || !m.tool_calls?.length)
      items.push({
        kind: 'assistant',
        key: `msg:${m.id}`,
        content: m.content,
        reasoning: '',
        streaming: false,
        depth: 0,
      });
    for (const c of m.tool_calls ?? []) {
      items.push({
        kind: 'tool',
        key: `tool:${c.id}`,
        name: c.name,
        label: c.label_short || c.name,
        args: c.arguments,
        status: TOOL_STATUS[c.status],
        output: '',
        result: c.result ?? '',
        depth: 0,
      });
      if (c.approval) items.push(approvalItem(c, c.approval));
    }
  }
  return items;
}

type HistoryCall = NonNullable<ChatMessageDto['tool_calls']>[number];

/**
 * The settled approval card of a past call, keyed as the live card (`req:` + request id): a command
 * as `pending_write` shows it, a write by the diff its card showed (`preview`), a file call without
 * one by its path and arguments, anything else by its arguments.
 */
function approvalItem(c: HistoryCall, a: ChatApprovalOutcome): Item {
  const args = c.arguments;
  const command = c.name === 'execute_cmd' && typeof args === 'object' ? args.command : undefined;
  const shown =
    typeof command === 'string'
      ? { newContent: `$ ${command}` }
      : a.preview
        ? { path: a.preview.path, oldContent: a.preview.old_content ?? '', newContent: a.preview.new_content }
        : { args, ...(c.path !== undefined ? { path: c.path } : {}) };
  return {
    kind: 'approval',
    key: `req:${a.request_id}`,
    requestId: a.request_id,
    toolCallId: c.id,
    toolName: c.name,
    ...shown,
    resolved: a.outcome,
    ...(a.decision ? { decision: a.decision } : {}),
  };
}

/** `older` first, then the items of `newer` not already among them (by key). */
export function mergeItems(older: readonly Item[], newer: readonly Item[]): Item[] {
  const seen = new Set(older.map((i) => i.key));
  return [...older, ...newer.filter((i) => !seen.has(i.key))];
}
