import { ChatMessageDto } from '@skald/contracts';
import type { ChatHistoryRow, ToolCallsRow } from '@skald/persistence';
import { iso, parseToolArguments } from './row-format';

/** Chat rows for the UI: users and the assistant, each assistant row with its tool calls. */
export function toChatMessage(m: ChatHistoryRow, calls: ToolCallsRow[]): ChatMessageDto {
  const meta = m.metadata as { attachments?: ChatMessageDto['attachments'] } | null;
  return {
    id: String(m.id),
    role: m.role === 'assistant' ? 'assistant' : 'user',
    content: String(m.content),
    ...(meta?.attachments ? { attachments: meta.attachments } : {}),
    created_at: iso(m.created_at),
    ...(m.role === 'assistant' && calls.length > 0
      ? {
          tool_calls: calls.map((c) => ({
            id: String(c.id),
            name: String(c.name),
            arguments: parseToolArguments(String(c.arguments)),
            status: c.status,
            result: c.result ?? null,
          })),
        }
      : {}),
  };
}
