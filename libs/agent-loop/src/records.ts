/** The write (mutations + events) that records one tool call's terminal status. */
import { CANCELLED_NOTE, INTERRUPTED_AFTER_START_NOTE } from './texts';
import type { Mutation, SessionEventDraft, ToolCallRow, ToolCallStatus, ToolCallSummary } from './types';

export interface CallRecord {
  mutations: Mutation[];
  events: SessionEventDraft[];
  summary: ToolCallSummary;
}

function record(
  row: ToolCallRow,
  status: ToolCallStatus,
  result: string | null,
  resultType: string | null,
  events: SessionEventDraft[],
  extra: Mutation[] = [],
): CallRecord {
  return {
    mutations: [...extra, { kind: 'updateToolCall', id: row.id, patch: { status, result, resultType } }],
    events,
    summary: {
      id: row.id,
      llmCallId: row.llmCallId,
      name: row.name,
      argumentsText: row.argumentsText,
      status,
      result,
    },
  };
}

export function doneRecord(
  row: ToolCallRow,
  content: string,
  options: {
    resultType?: string;
    changedPaths?: string[];
    openedPaths?: string[];
    extra?: Mutation[];
    before?: SessionEventDraft[];
  } = {},
): CallRecord {
  const resultType = options.resultType ?? 'text';
  const events: SessionEventDraft[] = [
    ...(options.before ?? []),
    { type: 'tool_done', tool_call_id: row.id, result: content, result_type: resultType },
    ...(options.changedPaths ?? []).map((path): SessionEventDraft => ({ type: 'file_changed', path })),
    ...(options.openedPaths ?? []).map((path): SessionEventDraft => ({ type: 'open_file', path })),
  ];
  return record(row, 'done', content, resultType, events, options.extra);
}

/** `error` is stored without the `Error: ` prefix the model sees. */
export function failedRecord(
  row: ToolCallRow,
  error: string,
  options: { extra?: Mutation[]; before?: SessionEventDraft[] } = {},
): CallRecord {
  return record(
    row,
    'failed',
    error,
    null,
    [...(options.before ?? []), { type: 'tool_error', tool_call_id: row.id, error }],
    options.extra,
  );
}

export function rejectedRecord(row: ToolCallRow, reason: string): CallRecord {
  return record(row, 'rejected', reason, null, [{ type: 'tool_rejected', tool_call_id: row.id, reason }]);
}

export function cancelledRecord(
  row: ToolCallRow,
  options: { extra?: Mutation[]; before?: SessionEventDraft[] } = {},
): CallRecord {
  return record(
    row,
    'cancelled',
    CANCELLED_NOTE,
    null,
    [...(options.before ?? []), { type: 'tool_cancelled', tool_call_id: row.id }],
    options.extra,
  );
}

/** Like `failedRecord`, `error` is stored without the `Error: ` prefix the model sees. */
export function interruptedRecord(row: ToolCallRow, error: string = INTERRUPTED_AFTER_START_NOTE): CallRecord {
  return record(row, 'interrupted', error, null, [{ type: 'tool_error', tool_call_id: row.id, error }]);
}

export function mergeRecords(records: CallRecord[]): { mutations: Mutation[]; events: SessionEventDraft[] } {
  return {
    mutations: records.flatMap((r) => r.mutations),
    events: records.flatMap((r) => r.events),
  };
}
