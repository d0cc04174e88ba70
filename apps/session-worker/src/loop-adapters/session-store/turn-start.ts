import type {
  ChatHistoryRow,
  CompactionSummariesRow,
  LlmUserBudgetsRow,
  SessionInboxRow,
  SessionScratchpadRow,
  SessionsRow,
  StackFramesRow,
  ToolCallsRow,
  ToolGrantsRow,
} from '@skald/persistence';
import { parseJsonText } from '@skald/persistence/pg-text';
import type { OwnerBudget } from '../../budgets/budget-rules';
import { GROUP_HAS_BUDGET, GROUP_LIMITS_JSON, limitsOfRow } from '../../budgets/budgets.repository';
import { ownerGroupsJson, resolveGroupPolicy, type GroupPolicy, type OwnerGroup } from '../../groups/group-policy';
import { SESSION_HAS_WORK } from '../../lease/lease.repository';
import type { CarriedHistory } from './history-carry';
import {
  type FrameRead,
  type InboxRead,
  jsonRows,
  jsonText,
  type MessageRead,
  type Read,
  type SessionRead,
  type ToolCallRead,
} from './row-reads';
import type { CarriedFrame } from './session-cache';
import type {
  CompactionSummary,
  FrameRow,
  InboxItem,
  MessageRow,
  ScratchpadNote,
  SessionInfo,
  ToolCallRow,
} from '@skald/agent-loop';

/**
 * Everything a turn reads before its first model call, as ONE statement (one snapshot, one round
 * trip) instead of a dozen: the session (with the user's client pin), its /stop flag and owner
 * role, its queued inbox, its active frames with every message (failed and superseded too) and
 * every tool call of each, the session's and each frame's tool grants, the scratchpad, each frame's
 * compaction summary, the user's agent rows (the catalog's overrides and own agents), the
 * owner's groups (its own `groups` and `group_members`: what they allow, and their budgets) and the
 * admin's limits of the owner (`llm_user_budgets`).
 *
 * Each part answers exactly what the separate reads answer (PgSessionStore's readers,
 * TurnStateRepository.turnControl, UserAgentsRepository.list): see
 * pg-session-store.turn-start.integration-spec.ts. Taken after the lease (reads happen under it).
 *
 * The turn's reads (frames and what follows) are only taken when the session has work a turn
 * starts from (`SESSION_HAS_WORK`: a running turn, a stop for a parked one, queued input to a
 * finished one); a parked turn the sweep looks at, or a wake with nothing queued, reads the
 * session and the inbox only (`complete` false: nothing else is primed).
 *
 * `$2`: the frames whose messages and tool calls the worker carries from the session's previous
 * turn (HistoryCarry): their rows are not read (the carried ones stand for them).
 */
export const TURN_START_NAME = 'skald_turn_start_v4';

/** The session's queued inbox (`$1`) as JSON text, in `ord` order (the start read, a transaction's fence statement). */
export const QUEUED_INBOX_JSON = queuedInboxJson('$1::uuid');

/**
 * The start read's columns (and the frame CTE `f` they need), for a statement whose WITH list
 * already has the session as CTE `ses` (`sessions.*` with `user_pin`) and `w` (one row, `work`):
 * `sid` is the session's id and `carried` the carried frames' ids, as SQL expressions; `sessionJson`
 * and `inbox` the session's and the queued inbox's JSON text (defaults: as read). Shared by
 * {@link TURN_START_SQL} and the submit's statement (InboxRepository.submitToActive), which reads
 * the same in the statement that takes the lease.
 */
export function turnStartParts(p: {
  ses: string;
  sid: string;
  carried: string;
  sessionJson?: string;
  inbox?: string;
}): { ctes: string; columns: string } {
  const { ses, sid, carried } = p;
  return {
    ctes: `f AS (SELECT * FROM stack_frames WHERE session_id = ${sid} AND status = 'active' AND (SELECT work FROM w))`,
    columns: ` ${p.sessionJson ?? `(SELECT row_to_json(${ses}) FROM ${ses})::text`} AS session,
 (SELECT work FROM w) AS complete,
 ${p.inbox ?? queuedInboxJson(sid)} AS inbox,
 (SELECT COALESCE(json_agg(f ORDER BY f.depth, f.ord), '[]'::json) FROM f)::text AS frames,
 (SELECT COALESCE(json_agg(m ORDER BY m.ord), '[]'::json) FROM chat_history m
   WHERE m.frame_id IN (SELECT id FROM f) AND m.frame_id <> ALL(${carried}))::text AS messages,
 (SELECT COALESCE(json_agg(t ORDER BY t.ord), '[]'::json) FROM tool_calls t
   WHERE t.frame_id IN (SELECT id FROM f) AND t.frame_id <> ALL(${carried}))::text AS tool_calls,
 (SELECT COALESCE(json_agg(g.group_name ORDER BY g.created_at, g.group_name), '[]'::json) FROM tool_grants g
   WHERE g.session_id = ${sid} AND g.frame_id IS NULL AND (SELECT work FROM w))::text AS session_grants,
 (SELECT COALESCE(json_agg(json_build_object('frame_id', g.frame_id, 'group_name', g.group_name)
                           ORDER BY g.created_at, g.group_name), '[]'::json) FROM tool_grants g
   WHERE g.frame_id IN (SELECT id FROM f))::text AS frame_grants,
 (SELECT COALESCE(json_agg(json_build_object('key', n.key, 'value', n.value) ORDER BY n.ord), '[]'::json)
    FROM session_scratchpad n
   WHERE n.scratchpad_session_id = (SELECT COALESCE(s.scratchpad_session_id, s.id) FROM ${ses} s)
     AND (SELECT work FROM w))::text AS scratchpad,
 (SELECT COALESCE(json_agg(c), '[]'::json) FROM compaction_summaries c
   WHERE c.frame_id IN (SELECT id FROM f))::text AS compactions,
 (SELECT COALESCE(json_agg(a ORDER BY a.agent_id), '[]'::json) FROM user_agents a
   WHERE a.user_id = (SELECT s.user_id FROM ${ses} s) AND (SELECT work FROM w))::text AS user_agents,
 ${ownerGroupsJson(
   `(SELECT s.user_id FROM ${ses} s)`,
   `, 'budget', CASE WHEN ${GROUP_HAS_BUDGET} THEN json_build_object(${GROUP_LIMITS_JSON}) END`,
 )}
   AS owner_groups,
 (SELECT row_to_json(b) FROM llm_user_budgets b WHERE b.user_id = (SELECT s.user_id FROM ${ses} s))::text
   AS owner_budget`,
  };
}

/** The session's (`sid`, an SQL expression) queued inbox as JSON text, in `ord` order. */
function queuedInboxJson(sid: string): string {
  return `(SELECT COALESCE(json_agg(i ORDER BY i.ord), '[]'::json) FROM session_inbox i
     WHERE i.session_id = ${sid} AND i.status = 'queued')::text`;
}

const START = turnStartParts({ ses: 's', sid: '$1::uuid', carried: '$2::uuid[]' });

export const TURN_START_SQL = `WITH s AS (
   SELECT s.*, p.client AS user_pin FROM sessions s
     LEFT JOIN llm_client_pins p ON p.user_id = s.user_id AND p.source = s.source
    WHERE s.id = $1::uuid),
 w AS (SELECT EXISTS (SELECT 1 FROM s WHERE ${SESSION_HAS_WORK}) AS work),
 ${START.ctes}
SELECT
${START.columns}`;

/** The statement's one row: the session as JSON text, each other part a JSON aggregate (text). */
export type TurnStartRead = Read<{
  session: string;
  complete: boolean;
  frames: string;
  session_grants: string;
  frame_grants: string;
  compactions: string;
  inbox: string;
  messages: string;
  tool_calls: string;
  scratchpad: string;
  user_agents: string;
  owner_groups: string;
  owner_budget: string | null;
}>;

/** A user's `user_agents` row as the statement returns it (the catalog maps it). */
export type RawUserAgentRow = {
  agent_id: string;
  prompt: string | null;
  meta: Record<string, unknown>;
  updated_at: unknown;
};

/** What {@link TURN_START_SQL} read, as the separate readers would have answered it. */
export interface TurnStart {
  /** When it was read (`Date.now()`): the parts that others may change are trusted for a short while only. */
  at: number;
  /** Whether the turn's reads were taken (the session has work); when false only session, stop, role and inbox are. */
  complete: boolean;
  session: SessionInfo;
  stop: boolean;
  role: SessionsRow['owner_role'];
  inbox: InboxItem[];
  frames: FrameRow[];
  /** Every message of each active frame (failed and superseded too), in `ord` order. */
  messages: Map<string, MessageRow[]>;
  toolCalls: Map<string, ToolCallRow[]>;
  /** Keyed as the store's cache keys them: `s:<session>`, `f:<frame>` (each active frame, none → []). */
  grants: Map<string, string[]>;
  scratchpad: ScratchpadNote[];
  /** Each active frame's summary, or null. */
  compactions: Map<string, CompactionSummary | null>;
  userAgents: RawUserAgentRow[];
  /** What the owner's groups allow, read with every start (complete or not): a change applies from the next turn. */
  groups: GroupPolicy;
  /** The owner's limits (an admin's for them, their groups' with a budget), read with every start like the groups. */
  budget: OwnerBudget;
}

export interface TurnStartMappers {
  toSessionInfo: (r: SessionRead) => SessionInfo;
  toFrame: (r: FrameRead) => FrameRow;
  toMessage: (r: MessageRead) => MessageRow;
  toToolCall: (r: ToolCallRead) => ToolCallRow;
  toInboxItem: (r: InboxRead) => InboxItem;
}

/** The read rows by frame, with each active frame's carried rows in place of the (unread) ones. */
function withCarried<T>(
  read: Map<string, T[]>,
  carried: CarriedHistory,
  rowsOf: (f: CarriedFrame) => T[],
): Map<string, T[]> {
  for (const [frameId, f] of carried) if (read.has(frameId)) read.set(frameId, rowsOf(f));
  return read;
}

function byFrame<T>(frames: readonly FrameRow[], rows: readonly T[], frameOf: (r: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>(frames.map((f) => [f.id, []]));
  for (const r of rows) out.get(frameOf(r))?.push(r);
  return out;
}

/** The owner's groups: what they allow, and the budgets of those that have one; the admin's limits of the owner. */
function ownerOf(row: TurnStartRead): Pick<TurnStart, 'groups' | 'budget'> {
  const groups = JSON.parse(jsonText(row.owner_groups)) as (OwnerGroup & { budget: LlmUserBudgetsRow | null })[];
  const user = typeof row.owner_budget === 'string' ? (JSON.parse(row.owner_budget) as LlmUserBudgetsRow) : null;
  return {
    groups: resolveGroupPolicy(groups),
    budget: {
      user: user ? limitsOfRow(user) : null,
      groups: groups.flatMap((g) => (g.budget ? [{ name: g.name, limits: limitsOfRow(g.budget) }] : [])),
    },
  };
}

/**
 * The statement's one row as a {@link TurnStart}; throws when the session does not exist. The rows of
 * an active frame in `carried` are the carried ones (the statement did not read them); a carried
 * frame no longer active is ignored.
 */
export function parseTurnStart(
  sessionId: string,
  row: TurnStartRead | undefined,
  map: TurnStartMappers,
  at: number,
  carried: CarriedHistory = new Map(),
): TurnStart {
  if (!row || typeof row.session !== 'string') throw new Error(`session ${sessionId} not found`);
  const s = parseJsonText<SessionRead>(row.session);
  const frames = jsonRows<StackFramesRow>(row.frames).map(map.toFrame);
  const sessionGrants = parseJsonText<string[]>(jsonText(row.session_grants));
  const grants = new Map<string, string[]>([[`s:${sessionId}`, sessionGrants]]);
  for (const f of frames) grants.set(`f:${f.id}`, []);
  for (const g of jsonRows<ToolGrantsRow>(row.frame_grants))
    grants.get(`f:${String(g.frame_id)}`)?.push(String(g.group_name));
  const compactions = new Map<string, CompactionSummary | null>(frames.map((f) => [f.id, null]));
  for (const c of jsonRows<CompactionSummariesRow>(row.compactions))
    compactions.set(String(c.frame_id), {
      frameId: String(c.frame_id),
      summary: String(c.summary),
      boundaryMessageId: String(c.boundary_message_id),
    });
  return {
    at,
    complete: row.complete === true,
    session: map.toSessionInfo(s),
    stop: s.stop_requested_at !== null && s.stop_requested_at !== undefined,
    role: (s.owner_role as SessionsRow['owner_role'] | undefined) ?? 'user',
    inbox: jsonRows<SessionInboxRow>(row.inbox, ['created_at']).map(map.toInboxItem),
    frames,
    messages: withCarried(
      byFrame(frames, jsonRows<ChatHistoryRow>(row.messages, ['created_at']).map(map.toMessage), (m) => m.frameId),
      carried,
      (f) => f.messages,
    ),
    toolCalls: withCarried(
      byFrame(frames, jsonRows<ToolCallsRow>(row.tool_calls).map(map.toToolCall), (c) => c.frameId),
      carried,
      (f) => f.toolCalls,
    ),
    grants,
    scratchpad: jsonRows<SessionScratchpadRow>(row.scratchpad).map((n) => ({
      key: String(n.key),
      value: String(n.value),
    })),
    compactions,
    // Not through the text codec: UserAgentsRepository reads and writes these rows without it.
    userAgents: (JSON.parse(jsonText(row.user_agents)) as RawUserAgentRow[]).map((a) => ({
      ...a,
      updated_at: new Date(a.updated_at as string),
    })),
    ...ownerOf(row),
  };
}
