import type {
  CompactionSummariesRow,
  Queryable,
  SessionScratchpadRow,
  SessionTodosRow,
  ToolGrantsRow,
} from '@skald/persistence';
import type {
  CompactionSummary,
  FrameRow,
  GrantScope,
  InboxItem,
  ListMessagesOptions,
  MessageRow,
  ScratchpadNote,
  SessionInfo,
  TodoItem,
  ToolCallRow,
} from '@skald/agent-loop';
import { queryRows } from './pg-text-query';
import type { FrameRead, InboxRead, MessageRead, Read, SessionRead, ToolCallRead } from './row-reads';
import {
  toCompaction,
  toFrame,
  toInboxItem,
  toMessage,
  toScratchpadNote,
  toSessionInfo,
  toToolCall,
} from './session-rows';

// The session store's reads, one statement each, for what its cache and the turn's start read do
// not answer (see PgSessionStore).

export async function readSession(db: Queryable, sessionId: string): Promise<SessionInfo> {
  // The user's pin for the session's source (`/model`, `select_client`) is the session's pin.
  const rows = await queryRows<SessionRead>(
    db,
    `SELECT s.*, p.client AS user_pin FROM sessions s
         LEFT JOIN llm_client_pins p ON p.user_id = s.user_id AND p.source = s.source
        WHERE s.id = $1`,
    [sessionId],
  );
  const r = rows[0];
  if (!r) throw new Error(`session ${sessionId} not found`);
  return toSessionInfo(r);
}

export async function readActiveFrames(db: Queryable, sessionId: string): Promise<FrameRow[]> {
  const rows = await queryRows<FrameRead>(
    db,
    `SELECT * FROM stack_frames WHERE session_id = $1 AND status = 'active' ORDER BY depth, ord`,
    [sessionId],
  );
  return rows.map(toFrame);
}

export async function readFrame(db: Queryable, frameId: string): Promise<FrameRow | null> {
  const rows = await queryRows<FrameRead>(db, `SELECT * FROM stack_frames WHERE id = $1`, [frameId]);
  return rows[0] ? toFrame(rows[0]) : null;
}

export async function readMessages(
  db: Queryable,
  frameId: string,
  options: ListMessagesOptions,
): Promise<MessageRow[]> {
  const params: unknown[] = [frameId];
  let where = `frame_id = $1`;
  if (!options.includeFailed) where += ` AND status = 'ok'`;
  if (options.afterMessageId) {
    params.push(options.afterMessageId);
    where += ` AND ord > (SELECT ord FROM chat_history WHERE id = $2)`;
  }
  const rows = await queryRows<MessageRead>(db, `SELECT * FROM chat_history WHERE ${where} ORDER BY ord`, params);
  return rows.map(toMessage);
}

export async function readToolCalls(db: Queryable, frameId: string): Promise<ToolCallRow[]> {
  const rows = await queryRows<ToolCallRead>(db, `SELECT * FROM tool_calls WHERE frame_id = $1 ORDER BY ord`, [
    frameId,
  ]);
  return rows.map(toToolCall);
}

export async function readToolCall(db: Queryable, toolCallId: string): Promise<ToolCallRow | null> {
  const rows = await queryRows<ToolCallRead>(db, `SELECT * FROM tool_calls WHERE id = $1`, [toolCallId]);
  return rows[0] ? toToolCall(rows[0]) : null;
}

export async function readScratchpad(db: Queryable, scratchpadSessionId: string): Promise<ScratchpadNote[]> {
  const rows = await queryRows<Read<SessionScratchpadRow>>(
    db,
    `SELECT key, value FROM session_scratchpad WHERE scratchpad_session_id = $1 ORDER BY ord`,
    [scratchpadSessionId],
  );
  return rows.map(toScratchpadNote);
}

export async function readTodos(db: Queryable, frameId: string): Promise<TodoItem[]> {
  const rows = await queryRows<Read<SessionTodosRow>>(db, `SELECT todos FROM session_todos WHERE frame_id = $1`, [
    frameId,
  ]);
  return (rows[0]?.todos as TodoItem[] | undefined) ?? [];
}

export async function readGrants(db: Queryable, scope: GrantScope): Promise<string[]> {
  const rows =
    scope.kind === 'session'
      ? await queryRows<Pick<ToolGrantsRow, 'group_name'>>(
          db,
          `SELECT group_name FROM tool_grants WHERE session_id = $1 AND frame_id IS NULL ORDER BY created_at, group_name`,
          [scope.sessionId],
        )
      : await queryRows<Pick<ToolGrantsRow, 'group_name'>>(
          db,
          `SELECT group_name FROM tool_grants WHERE frame_id = $1 ORDER BY created_at, group_name`,
          [scope.frameId],
        );
  return rows.map((r) => String(r.group_name));
}

export async function readCompaction(db: Queryable, frameId: string): Promise<CompactionSummary | null> {
  const rows = await queryRows<Read<CompactionSummariesRow>>(
    db,
    `SELECT * FROM compaction_summaries WHERE frame_id = $1`,
    [frameId],
  );
  return rows[0] ? toCompaction(rows[0]) : null;
}

export async function readQueuedInbox(db: Queryable, sessionId: string): Promise<InboxItem[]> {
  const rows = await queryRows<InboxRead>(
    db,
    `SELECT * FROM session_inbox WHERE session_id = $1 AND status = 'queued' ORDER BY ord`,
    [sessionId],
  );
  return rows.map(toInboxItem);
}
