import { ChatMessageDto, type ChatApprovalOutcome } from '@skald/contracts';
import type { ChatHistoryRow, ToolCallsRow } from '@skald/persistence';
import { toolLabel } from '../loop-adapters/tool-label';
import { iso, parseToolArguments } from './row-format';

/** How a human answered each approval and the change its card showed, by request id (the approval service's record). */
export type CallDecisions = ReadonlyMap<string, Pick<ChatApprovalOutcome, 'decision' | 'preview'>>;

/** The question tool asks through a request too; its card is a question, not an approval. */
const QUESTION_TOOL = 'ask_user_clarification';

/**
 * How a call's approval ended, read off the call: rejected, run (approved), or ended before it ran
 * (cancelled). A call still waiting, or one that never asked, has none: the events after the page
 * bring a waiting card.
 */
export function approvalOutcome(
  c: ToolCallsRow,
  decisions: CallDecisions = new Map(),
): ChatApprovalOutcome | undefined {
  if (!c.request_id || c.name === QUESTION_TOOL) return undefined;
  if (c.status === 'pending' || c.status === 'awaiting_human') return undefined;
  const outcome =
    c.status === 'rejected'
      ? 'rejected'
      : c.started_at !== null || c.status === 'done' || c.status === 'failed' || c.status === 'running'
        ? 'approved'
        : 'cancelled';
  const known = decisions.get(String(c.request_id));
  const decision = outcome === 'cancelled' ? undefined : known?.decision;
  return {
    request_id: String(c.request_id),
    outcome,
    ...(decision ? { decision } : {}),
    ...(known?.preview ? { preview: known.preview } : {}),
  };
}

/** Chat rows for the UI: users and the assistant, each assistant row with its tool calls. */
export function toChatMessage(
  m: ChatHistoryRow,
  calls: ToolCallsRow[],
  decisions: CallDecisions = new Map(),
): ChatMessageDto {
  const meta = m.metadata as { attachments?: ChatMessageDto['attachments'] } | null;
  return {
    id: String(m.id),
    role: m.role === 'assistant' ? 'assistant' : 'user',
    content: String(m.content),
    ...(meta?.attachments ? { attachments: meta.attachments } : {}),
    created_at: iso(m.created_at),
    ...(m.role === 'assistant' && calls.length > 0
      ? {
          tool_calls: calls.map((c) => {
            const args = parseToolArguments(String(c.arguments));
            const label = toolLabel(String(c.name), args);
            const approval = approvalOutcome(c, decisions);
            return {
              id: String(c.id),
              name: String(c.name),
              arguments: args,
              status: c.status,
              result: c.result ?? null,
              label_short: label.short,
              ...(label.path !== undefined ? { path: label.path } : {}),
              ...(approval ? { approval } : {}),
            };
          }),
        }
      : {}),
  };
}
