/** Approval and question requests through the human-wait port. */
import { isRecord, stringArg } from './json';
import type { ApprovalPreview, HumanAnswer, HumanRequest } from './ports';
import { ABORTED, raceAbort } from './signals';
import type { FrameContext } from './turn-context';
import type { SessionEventDraft, ToolCallRow } from './types';

/** Wait for the human; the turn's signal ends the wait as `cancelled`. */
export async function waitForHuman(fctx: FrameContext, request: HumanRequest): Promise<HumanAnswer> {
  const answer = await raceAbort(fctx.turn.deps.human.awaitHuman(request, fctx.signal), fctx.signal);
  return answer === ABORTED ? { kind: 'cancelled' } : answer;
}

/** `pending_write` for execute_cmd and previewable writes, otherwise `approval_required`. */
export function approvalEvent(
  row: ToolCallRow,
  requestId: string,
  args: unknown,
  preview: ApprovalPreview | null,
  landsAt: string | null = null,
): SessionEventDraft {
  const lands = landsAt !== null ? { lands_at: landsAt } : {};
  if (row.name === 'execute_cmd') {
    const command = stringArg(args, 'command') ?? (isRecord(args) ? '' : String(args));
    return {
      type: 'pending_write',
      request_id: requestId,
      tool_call_id: row.id,
      kind: 'command',
      new_content: `$ ${command}`,
      ...lands,
    };
  }
  if (preview) {
    return {
      type: 'pending_write',
      request_id: requestId,
      tool_call_id: row.id,
      kind: 'file',
      path: preview.path,
      ...(preview.oldContent !== undefined ? { old_content: preview.oldContent } : {}),
      new_content: preview.newContent,
      ...lands,
    };
  }
  return {
    type: 'approval_required',
    request_id: requestId,
    tool_call_id: row.id,
    tool_name: row.name,
    arguments: args,
    ...lands,
  };
}

export interface QuestionArgs {
  title: string;
  question: string;
  suggestedAnswers: string[];
}

export function questionArgs(args: unknown): QuestionArgs | null {
  const question = stringArg(args, 'question');
  if (!question) return null;
  const suggested = isRecord(args) && Array.isArray(args['suggested_answers']) ? args['suggested_answers'] : [];
  return {
    title: stringArg(args, 'title') ?? 'Question',
    question,
    suggestedAnswers: suggested.filter((s): s is string => typeof s === 'string'),
  };
}
