/**
 * The one projection of stored history into OpenAI chat-completions messages (spec 000
 * "Context Building"): static system → scratchpad → compaction summary → history → dynamic
 * tail → tail reminder. Pure: everything it needs is handed in.
 */
import { formatZonedDateTime } from './datetime';
import { hiddenToolResult, INTERRUPTED_AFTER_START, INTERRUPTED_BEFORE_START } from './texts';
import type { Attachment, MessageRow, ScratchpadNote, ToolCallRow, WireMessage } from './types';

export interface ProjectionInput {
  /** The agent's static prompt (may contain `__KEY__` sentinels). */
  systemPrompt: string;
  substitutions: Record<string, string>;
  /** Wrap the static prompt in a `cache_control: ephemeral` block. */
  cacheControl: boolean;
  scratchpad: ScratchpadNote[];
  compactionSummary: string | null;
  /** Non-failed rows of the frame (after the compaction boundary), in order. */
  messages: MessageRow[];
  /** Tool calls of the frame, in order. */
  toolCalls: ToolCallRow[];
  /** Keep only the last N rows (compaction off); null = keep all. */
  maxHistoryMessages: number | null;
  maxToolResultChars: number | null;
  dynamicTail: string | null;
  tailReminder: string | null;
}

export function applySubstitutions(text: string, substitutions: Record<string, string>): string {
  let out = text;
  for (const [key, value] of Object.entries(substitutions)) out = out.split(`__${key}__`).join(value);
  return out;
}

export function scratchpadMessage(notes: ScratchpadNote[]): string {
  const lines = notes.map((n) => `  <note key="${n.key}">${n.value}</note>`);
  return ['<scratchpad>', ...lines, '</scratchpad>'].join('\n');
}

export const COMPACTION_SUMMARY_HEADER = 'Summary of the earlier conversation (older messages were compacted):';

/** The `[SYSTEM INFO]` block for attachments, added on the fly (never stored). */
export function attachmentsBlock(attachments: Attachment[]): string {
  const lines = attachments.map((a) => `- ${a.path}`);
  return `[SYSTEM INFO] The user attached ${attachments.length === 1 ? 'a file' : 'files'}:\n${lines.join('\n')}`;
}

/** The model-visible tool result for a stored call (ARCHITECTURE.md "Who checks what"). */
export function toolResultContent(call: ToolCallRow): string {
  switch (call.status) {
    case 'done':
      return call.result ?? '';
    case 'failed':
      return `Error: ${call.result ?? 'unknown error'}`;
    case 'cancelled':
    case 'rejected':
      return call.result ?? '';
    case 'pending':
    case 'awaiting_human':
      return INTERRUPTED_BEFORE_START;
    case 'running':
    case 'interrupted':
      return INTERRUPTED_AFTER_START;
  }
}

function userContent(row: MessageRow): string {
  if (row.attachments && row.attachments.length > 0) {
    return `${row.content}\n\n${attachmentsBlock(row.attachments)}`;
  }
  return row.content;
}

export function projectMessages(input: ProjectionInput): WireMessage[] {
  const out: WireMessage[] = [];
  const staticText = applySubstitutions(input.systemPrompt, input.substitutions);
  out.push({
    role: 'system',
    content: input.cacheControl
      ? [{ type: 'text', text: staticText, cache_control: { type: 'ephemeral' } }]
      : staticText,
  });
  if (input.scratchpad.length > 0) out.push({ role: 'system', content: scratchpadMessage(input.scratchpad) });
  if (input.compactionSummary) {
    out.push({ role: 'system', content: `${COMPACTION_SUMMARY_HEADER}\n${input.compactionSummary}` });
  }

  let rows = input.messages.filter((m) => m.status === 'ok');
  if (input.maxHistoryMessages !== null && rows.length > input.maxHistoryMessages) {
    rows = rows.slice(rows.length - input.maxHistoryMessages);
  }
  const callsByMessage = new Map<string, ToolCallRow[]>();
  for (const call of input.toolCalls) {
    const list = callsByMessage.get(call.messageId) ?? [];
    list.push(call);
    callsByMessage.set(call.messageId, list);
  }
  for (const list of callsByMessage.values()) list.sort((a, b) => a.index - b.index);

  let currentTurnStart = -1;
  rows.forEach((row, i) => {
    if (row.role !== 'assistant') currentTurnStart = i;
  });

  let pendingUser: string[] = [];
  const flushUser = (): void => {
    if (pendingUser.length > 0) out.push({ role: 'user', content: pendingUser.join('\n\n') });
    pendingUser = [];
  };
  rows.forEach((row, i) => {
    if (row.role !== 'assistant') {
      pendingUser.push(userContent(row));
      return;
    }
    flushUser();
    const calls = callsByMessage.get(row.id) ?? [];
    if (calls.length === 0) {
      out.push({ role: 'assistant', content: row.content });
      return;
    }
    out.push({
      role: 'assistant',
      content: row.content === '' ? null : row.content,
      tool_calls: calls.map((c) => ({
        id: c.llmCallId,
        type: 'function',
        function: { name: c.name, arguments: c.argumentsText },
      })),
    });
    const previousTurn = i < currentTurnStart;
    for (const call of calls) {
      let content = toolResultContent(call);
      const limit = input.maxToolResultChars;
      if (previousTurn && limit !== null && content.length > limit) {
        content = hiddenToolResult(call.name, content.length, limit);
      }
      out.push({ role: 'tool', tool_call_id: call.llmCallId, content });
    }
  });
  flushUser();

  if (input.dynamicTail) out.push({ role: 'system', content: input.dynamicTail });
  if (input.tailReminder) out.push({ role: 'system', content: input.tailReminder });
  return out;
}

export interface DynamicTailInput {
  memoryContext: string | null;
  extraPrompts: string[];
  now: Date;
  timeZone: string;
  os: string;
  workingDirectory: string | null;
}

/** The per-turn system message placed after the history (never part of the cached prefix). */
export function dynamicTail(input: DynamicTailInput): string {
  const parts: string[] = [];
  if (input.memoryContext) parts.push(input.memoryContext);
  for (const p of input.extraPrompts) if (p.trim() !== '') parts.push(p);
  const env = [
    `Current date and time: ${formatZonedDateTime(input.now, input.timeZone)}`,
    `Operating system: ${input.os}`,
  ];
  if (input.workingDirectory) {
    env.push(
      `Working directory: ${input.workingDirectory} (filesystem tools and execute_cmd resolve relative paths against it; no need to cd)`,
    );
  }
  parts.push(env.join('\n'));
  return parts.join('\n\n');
}
