import type {
  CompactionSummary,
  FrameRow,
  FrameStatus,
  InboxDelivery,
  InboxItem,
  InboxRewind,
  LlmCallContext,
  MessageRole,
  MessageRow,
  MessageStatus,
  ScratchpadNote,
  SessionInfo,
  ToolCallRow,
  ToolCallStatus,
  TurnState,
} from '@skald/agent-loop';
import type {
  AssertTrue,
  ChatHistoryRow,
  CompactionSummariesRow,
  LlmUsageRow,
  SameType,
  SessionInboxRow,
  SessionScratchpadRow,
  SessionsRow,
  StackFramesRow,
  ToolCallsRow,
} from '@skald/persistence';
import { iso } from '../../sessions/row-format';
import {
  type FrameRead,
  type InboxRead,
  jsonRows,
  type MessageRead,
  type Read,
  type SessionRead,
  type ToolCallRead,
} from './row-reads';

/** The mapping of the session store's rows (see row-reads.ts) to the loop's domain types. */

/**
 * The loop's unions (libs/agent-loop imports no other project, so it cannot take them from rows.ts) hold exactly
 * the literals of the CHECK constraints the generated rows carry: a migration that changes a list, or an edit of
 * the loop's type alone, stops this file compiling on the line naming the column. The loop meters rounds and
 * compactions only (the worker writes the titles' usage), so its purpose is one of the column's.
 */
type _LoopUnionsAreTheChecks = [
  AssertTrue<SameType<MessageRole, ChatHistoryRow['role']>>,
  AssertTrue<SameType<MessageStatus, ChatHistoryRow['status']>>,
  AssertTrue<SameType<ToolCallStatus, ToolCallsRow['status']>>,
  AssertTrue<SameType<FrameStatus, StackFramesRow['status']>>,
  AssertTrue<SameType<InboxDelivery, SessionInboxRow['delivery']>>,
  AssertTrue<SameType<InboxRewind['kind'], NonNullable<SessionInboxRow['rewind_kind']>>>,
  AssertTrue<SameType<TurnState, SessionsRow['turn_state']>>,
  AssertTrue<LlmCallContext['purpose'] extends LlmUsageRow['purpose'] ? true : false>,
];

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** A JSON aggregate of queued inbox rows (see QUEUED_INBOX_JSON and the one-statement commit). */
export function inboxOf(json: unknown): InboxItem[] {
  return jsonRows<SessionInboxRow>(json, ['created_at']).map(toInboxItem);
}

/** The mappers the turn's start read (turn-start.ts) parses its aggregates with. */
export const TURN_START_MAPPERS = {
  toSessionInfo: (r: SessionRead) => toSessionInfo(r),
  toFrame: (r: FrameRead) => toFrame(r),
  toMessage: (r: MessageRead) => toMessage(r),
  toToolCall: (r: ToolCallRead) => toToolCall(r),
  toInboxItem: (r: InboxRead) => toInboxItem(r),
};

export function toSessionInfo(r: SessionRead): SessionInfo {
  const rc = (r.run_context ?? {}) as {
    working_directory?: string;
    system_prompt?: string[];
    allow_fs_reads?: string[];
    allow_fs_writes?: string[];
    enabled_mcp_servers?: string[];
  };
  return {
    id: String(r.id),
    userId: String(r.user_id),
    agentId: String(r.agent_id),
    source: String(r.source),
    isInteractive: Boolean(r.is_interactive),
    isEphemeral: Boolean(r.is_ephemeral),
    autoDenyApprovals: Boolean(r.auto_deny_approvals),
    scratchpadSessionId: String(r.scratchpad_session_id ?? r.id),
    runContext: {
      workingDirectory: rc.working_directory ?? null,
      systemPrompt: rc.system_prompt ?? [],
      allowFsReads: stringList(rc.allow_fs_reads),
      allowFsWrites: stringList(rc.allow_fs_writes),
      enabledMcpServers: stringList(rc.enabled_mcp_servers),
    },
    securityGroup: typeof r.security_group === 'string' && r.security_group !== '' ? r.security_group : null,
    pinnedClient: (r.user_pin as string | null) ?? (r.client_pin as string | null) ?? null,
    turnState: r.turn_state as SessionsRow['turn_state'],
    turnId: (r.turn_id as string | null) ?? null,
  };
}

/** A stored list of paths; anything else (an old or hand-edited row) counts as none. */
function stringList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

export function toFrame(r: FrameRead): FrameRow {
  return {
    id: String(r.id),
    sessionId: String(r.session_id),
    parentFrameId: (r.parent_frame_id as string | null) ?? null,
    parentToolCallId: (r.parent_tool_call_id as string | null) ?? null,
    agentId: String(r.agent_id),
    depth: Number(r.depth),
    status: r.status as StackFramesRow['status'],
    clientPin: (r.client as string | null) ?? null,
  };
}

export function toMessage(r: MessageRead): MessageRow {
  const meta = r.metadata as { attachments?: MessageRow['attachments'] } | null;
  return {
    id: String(r.id),
    sessionId: String(r.session_id),
    frameId: String(r.frame_id),
    role: r.role as ChatHistoryRow['role'],
    content: String(r.content),
    reasoningContent: (r.reasoning as string | null) ?? null,
    status: r.status as ChatHistoryRow['status'],
    isSynthetic: Boolean(r.is_synthetic),
    attachments: meta?.attachments ?? null,
    clientMessageId: (r.client_message_id as string | null) ?? null,
    inputTokens: num(r.input_tokens),
    outputTokens: num(r.output_tokens),
    costUsd: r.cost_usd === null || r.cost_usd === undefined ? null : Number(r.cost_usd),
    tokensEstimated: Boolean(r.tokens_estimated),
    llmClient: (r.llm_client as string | null) ?? null,
    llmModel: (r.llm_model as string | null) ?? null,
    createdAt: iso(r.created_at),
  };
}

export function toToolCall(r: ToolCallRead): ToolCallRow {
  return {
    id: String(r.id),
    sessionId: String(r.session_id),
    frameId: String(r.frame_id),
    messageId: String(r.message_id),
    index: Number(r.idx),
    llmCallId: String(r.llm_call_id),
    name: String(r.name),
    argumentsText: String(r.arguments),
    status: r.status as ToolCallsRow['status'],
    result: (r.result as string | null) ?? null,
    resultType: (r.result_type as string | null) ?? null,
    requestId: (r.request_id as string | null) ?? null,
    childFrameId: (r.child_frame_id as string | null) ?? null,
    previewHash: (r.preview_hash as string | null) ?? null,
    ...(r.stale_reasks ? { staleReasks: Number(r.stale_reasks) } : {}),
    judgedLanding: (r.judged_landing as ToolCallRow['judgedLanding']) ?? null,
  };
}

export function toInboxItem(r: InboxRead): InboxItem {
  return {
    id: String(r.id),
    sessionId: String(r.session_id),
    clientMessageId: String(r.client_message_id),
    content: String(r.content),
    attachments: (r.attachments as InboxItem['attachments']) ?? null,
    delivery: r.delivery as SessionInboxRow['delivery'],
    createdAt: iso(r.created_at),
    ...(r.tool_result ? { toolResult: toolResultOf(r.tool_result) } : {}),
    ...(r.is_synthetic === true ? { isSynthetic: true } : {}),
    ...(r.rewind_kind
      ? {
          rewind: {
            kind: r.rewind_kind as NonNullable<SessionInboxRow['rewind_kind']>,
            messageId: String(r.rewind_message_id),
          },
        }
      : {}),
  };
}

/** `session_inbox.tool_result`: a system delivery (an async task's result) entering as a completed call. */
function toolResultOf(v: unknown): InboxItem['toolResult'] {
  const t = v as { tool_name: string; arguments_text: string; result: string };
  return { toolName: t.tool_name, argumentsText: t.arguments_text, result: t.result };
}

export function toScratchpadNote(r: Read<SessionScratchpadRow>): ScratchpadNote {
  return { key: String(r.key), value: String(r.value) };
}

export function toCompaction(r: Read<CompactionSummariesRow>): CompactionSummary {
  return { frameId: String(r.frame_id), summary: String(r.summary), boundaryMessageId: String(r.boundary_message_id) };
}
