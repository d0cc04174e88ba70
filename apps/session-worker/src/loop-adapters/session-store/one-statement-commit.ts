import { deepToPgText, pgParams } from '@skald/persistence/pg-text';
import type { LlmUsageRow } from '@skald/persistence';
import type { Mutation, NewFrame, NewMessage, NewToolCall, SessionEventDraft, ToolCallPatch } from '@skald/agent-loop';
import { INBOX_LOCK_ORDER } from './inbox-lock-order';
import {
  CHAT_HISTORY_INSERT,
  insertColumns,
  SESSION_EVENTS_INSERT,
  STACK_FRAMES_INSERT,
} from '../../sessions/insert-columns.constants';

/**
 * The hot commits of a turn (its first commit: the inbox items entering, the root frame of a fresh
 * conversation, the turn state; and each round's: the model's answer with its calls, a call
 * `running`, a call's result, the final answer) as ONE statement: a data-modifying CTE whose every
 * write is conditioned on `go` — the fence (`FOR SHARE` on the lease row under this epoch) AND every
 * inbox item the commit settles still queued in this session (`claim` locks them `FOR UPDATE`, so
 * a racing /new that moves one is waited for and seen). So it is one implicit transaction — no
 * BEGIN/COMMIT round trips — and a fenced-out commit, or one whose item was already settled or
 * moved, writes nothing (the caller then gets the transaction path's error). The statement holds only
 * the parts this commit writes (its shape, {@link SHAPE_PARTS}); each shape's text is generated from
 * the same parts here and prepared once per connection under its own name.
 *
 * Besides the writes it returns whether a /stop is recorded on the session row it wrote (the row
 * as updated: a stop committed before it is seen), and the session's queued inbox as of the commit (the round boundary
 * that follows reads it from there instead of asking Postgres again) — see PgSessionStore.listInbox.
 */

/** The mutation kinds the one statement writes; any other kind takes the transaction path. */
const FAST_KINDS = new Set<Mutation['kind']>([
  'appendMessage',
  'enterInbox',
  'consumeInbox',
  'createToolCall',
  'updateToolCall',
  'openFrame',
  'setTurnState',
]);

/** One answered model call's row of the ledger (`llm_usage`), written with its message. */
export interface UsageRow {
  userId: string;
  sessionId: string;
  frameId: string | null;
  messageId: string | null;
  purpose: LlmUsageRow['purpose'];
  client: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  estimated: boolean;
  costUsd: number | null;
}

/**
 * Whether `mutations` can be one statement. Not when a kind needs a check the statement does not
 * make (a frame closing must find it active, a discard is a no-op for an item that left) or is rare;
 * not when one row would be written twice (all parts of a statement see the same snapshot, so an
 * update of a row inserted or updated by the same statement would be lost; an inbox item settled
 * twice). An inbox item entering or consumed fits: `go` in the statement refuses the whole commit
 * unless every such item is still queued in the session, as the transaction's `settleInbox` does.
 */
export function fitsOneStatement(mutations: readonly Mutation[]): boolean {
  const created = new Set<string>();
  const updated = new Set<string>();
  const settled = new Set<string>();
  let turnStates = 0;
  for (const m of mutations) {
    if (!FAST_KINDS.has(m.kind)) return false;
    if (m.kind === 'createToolCall') created.add(m.call.id);
    if (m.kind === 'updateToolCall') {
      if (created.has(m.id) || updated.has(m.id)) return false;
      updated.add(m.id);
    }
    if (m.kind === 'enterInbox' || m.kind === 'consumeInbox') {
      if (settled.has(m.inboxId)) return false;
      settled.add(m.inboxId);
    }
    if (m.kind === 'setTurnState' && ++turnStates > 1) return false;
  }
  return true;
}

/**
 * The fence and the events of a commit, as the store's fence-and-append takes them (`$1`–`$6`) and
 * as {@link oneStatementCommit} binds them: the session, the fence's owner and epoch, and the
 * events (count, types, JSON payloads).
 */
export function fenceAndEventParams(
  sessionId: string,
  fence: { owner: string; epoch: number },
  events: readonly SessionEventDraft[],
): unknown[] {
  return [
    sessionId,
    fence.owner,
    fence.epoch,
    events.length,
    events.map((e) => e.type),
    events.map((e) => JSON.stringify(e)),
  ];
}

/**
 * The parts a commit writes, by kind. A part is in the statement only when the commit writes
 * something there: its SHAPE. Each shape is its own prepared statement, so the executor
 * initialises only the parts that write this time. A connection prepares at most 2^7 × 3 of them (a
 * part's letter is in the name when it writes; `u` or `U`), a handful in practice: the answer, the
 * result, a call `running`, the final answer, the first commit.
 */
interface CommitParts {
  messages: NewMessage[];
  calls: NewToolCall[];
  updates: { id: string; patch: ToolCallPatch }[];
  frames: NewFrame[];
  turn: { state: string; turnId: string | null } | null;
  settled: string[];
  events: readonly SessionEventDraft[];
  usage: readonly UsageRow[];
}

/** The optional parts of the statement, in the order their letter appears in a shape's name. */
export const SHAPE_PARTS = {
  i: 'inbox items settled (claim, settled; `go` waits for them)',
  f: 'frames opened',
  e: 'events appended (the seq bump)',
  t: 'the turn state',
  m: 'messages',
  c: 'calls created',
  u: 'one call updated (scalar parameters)',
  U: 'several calls updated',
  l: 'the llm_usage rows',
} as const;
export type ShapePart = keyof typeof SHAPE_PARTS;

function partsOf(
  mutations: readonly Mutation[],
  events: readonly SessionEventDraft[],
  usage: readonly UsageRow[],
): CommitParts {
  const p: CommitParts = { messages: [], calls: [], updates: [], frames: [], turn: null, settled: [], events, usage };
  for (const m of mutations) {
    if (m.kind === 'appendMessage') p.messages.push(m.message);
    else if (m.kind === 'enterInbox') {
      p.messages.push(m.message);
      p.settled.push(m.inboxId);
    } else if (m.kind === 'consumeInbox') p.settled.push(m.inboxId);
    else if (m.kind === 'openFrame') p.frames.push(m.frame);
    else if (m.kind === 'createToolCall') p.calls.push(m.call);
    else if (m.kind === 'updateToolCall') p.updates.push({ id: m.id, patch: m.patch });
    else if (m.kind === 'setTurnState') p.turn = { state: m.state, turnId: m.turnId ?? null };
    else throw new Error(`mutation ${m.kind} does not fit one statement`);
  }
  return p;
}

/** The shape of a commit: the letters of {@link SHAPE_PARTS} it writes, in their order. */
function shapeOf(p: CommitParts): Set<ShapePart> {
  const present: Record<ShapePart, boolean> = {
    i: p.settled.length > 0,
    f: p.frames.length > 0,
    e: p.events.length > 0,
    t: p.turn !== null,
    m: p.messages.length > 0,
    c: p.calls.length > 0,
    u: p.updates.length === 1,
    U: p.updates.length > 1,
    l: p.usage.length > 0,
  };
  return new Set((Object.keys(SHAPE_PARTS) as ShapePart[]).filter((k) => present[k]));
}

/** The name a shape's statement is prepared under. */
export function shapeName(shape: ReadonlySet<ShapePart>): string {
  return `${ONE_STATEMENT_COMMIT_PREFIX}${(Object.keys(SHAPE_PARTS) as ShapePart[]).filter((k) => shape.has(k)).join('')}`;
}
export const ONE_STATEMENT_COMMIT_PREFIX = 'skald_commit_v7_';

const text = (v: string | null | undefined): string | null => (v === null || v === undefined ? null : v);
const str = (v: number | boolean | null | undefined): string | null =>
  v === null || v === undefined ? null : String(v);
const has = (v: unknown): string => String(v !== undefined);

/** A call's judged landing as the `jsonb` text of `tool_calls.judged_landing` (null: none). */
export function landingJson(v: ReadonlyArray<string | null> | null | undefined): string | null {
  return v === null || v === undefined ? null : JSON.stringify(deepToPgText([...v]));
}

/** A column of a part's `unnest`: its alias and its value of a row, as text or null. */
type Column<T> = [alias: string, value: (r: T) => string | null];

const MESSAGE_COLUMNS: Column<NewMessage>[] = [
  ['id', (m) => m.id],
  ['sid', (m) => m.sessionId],
  ['fid', (m) => m.frameId],
  ['role', (m) => m.role],
  ['content', (m) => m.content],
  ['reasoning', (m) => text(m.reasoningContent)],
  ['syn', (m) => str(m.isSynthetic)],
  ['status', (m) => m.status ?? 'ok'],
  ['meta', (m) => (m.attachments ? JSON.stringify(deepToPgText({ attachments: m.attachments })) : null)],
  ['cmid', (m) => text(m.clientMessageId)],
  ['itok', (m) => str(m.inputTokens)],
  ['otok', (m) => str(m.outputTokens)],
  ['created', (m) => m.createdAt],
  ['cost', (m) => str(m.costUsd)],
  ['est', (m) => str(m.tokensEstimated ?? false)],
  ['client', (m) => text(m.llmClient)],
  ['model', (m) => text(m.llmModel)],
];
const CALL_COLUMNS: Column<NewToolCall>[] = [
  ['id', (c) => c.id],
  ['sid', (c) => c.sessionId],
  ['fid', (c) => c.frameId],
  ['mid', (c) => c.messageId],
  ['idx', (c) => String(c.index)],
  ['llm', (c) => c.llmCallId],
  ['name', (c) => c.name],
  ['args', (c) => c.argumentsText],
  ['status', (c) => c.status],
  ['result', (c) => text(c.result)],
  ['rtype', (c) => text(c.resultType)],
  ['req', (c) => text(c.requestId)],
  ['child', (c) => text(c.childFrameId)],
  ['ph', (c) => text(c.previewHash)],
  ['jl', (c) => landingJson(c.judgedLanding)],
];
const UPDATE_COLUMNS: Column<{ id: string; patch: ToolCallPatch }>[] = [
  ['id', (u) => u.id],
  ['status', (u) => u.patch.status],
  ['has_result', (u) => has(u.patch.result)],
  ['result', (u) => text(u.patch.result)],
  ['has_rtype', (u) => has(u.patch.resultType)],
  ['rtype', (u) => text(u.patch.resultType)],
  ['has_req', (u) => has(u.patch.requestId)],
  ['req', (u) => text(u.patch.requestId)],
  ['has_child', (u) => has(u.patch.childFrameId)],
  ['child', (u) => text(u.patch.childFrameId)],
  ['has_ph', (u) => has(u.patch.previewHash)],
  ['ph', (u) => text(u.patch.previewHash)],
  ['stale', (u) => str(u.patch.staleReasks)],
  ['has_jl', (u) => has(u.patch.judgedLanding)],
  ['jl', (u) => landingJson(u.patch.judgedLanding)],
];
const USAGE_COLUMNS: Column<UsageRow>[] = [
  ['uid', (r) => r.userId],
  ['sid', (r) => r.sessionId],
  ['fid', (r) => text(r.frameId)],
  ['mid', (r) => text(r.messageId)],
  ['purpose', (r) => r.purpose],
  ['client', (r) => r.client],
  ['model', (r) => r.model],
  ['itok', (r) => String(r.inputTokens)],
  ['otok', (r) => String(r.outputTokens)],
  ['ctok', (r) => String(r.cachedInputTokens)],
  ['est', (r) => String(r.estimated)],
  ['cost', (r) => str(r.costUsd)],
];
const FRAME_COLUMNS: Column<NewFrame>[] = [
  ['id', (f) => f.id],
  ['sid', (f) => f.sessionId],
  ['pfid', (f) => text(f.parentFrameId)],
  ['ptcid', (f) => text(f.parentToolCallId)],
  ['agent', (f) => f.agentId],
  ['depth', (f) => String(f.depth)],
  ['status', (f) => f.status],
  ['client', (f) => text(f.clientPin)],
];

/** A prepared commit: the statement of its shape, by name, and its parameters. */
export interface OneStatementCommit {
  name: string;
  text: string;
  values: unknown[];
}

/**
 * The commit of `mutations` as one statement of its shape. The text depends on the shape alone
 * (parameters are numbered in the order the parts bind them), so one name is one text.
 */
export function oneStatementCommit(
  sessionId: string,
  fence: { owner: string; epoch: number },
  mutations: readonly Mutation[],
  events: readonly SessionEventDraft[],
  usage: readonly UsageRow[],
): OneStatementCommit {
  const p = partsOf(mutations, events, usage);
  const shape = shapeOf(p);
  const values: unknown[] = [];
  const bind = (v: unknown): string => {
    values.push(v);
    return `$${values.length}`;
  };
  /** `unnest` of one text[] parameter per column, `WITH ORDINALITY` as u(aliases…, n). */
  const unnest = <T>(rows: readonly T[], cols: Column<T>[], ordinality = true): string =>
    `unnest(${cols.map(([, col]) => `${bind(rows.map(col))}::text[]`).join(', ')})` +
    (ordinality
      ? ` WITH ORDINALITY AS u(${cols.map(([a]) => a).join(', ')}, n)`
      : ` AS u(${cols.map(([a]) => a).join(', ')})`);

  /**
   * One row as scalar parameters: a generic plan knows it is one row (of an `unnest` of a parameter it
   * guesses ten, and an update joined to ten rows costs more than a custom plan, so Postgres would
   * plan the statement at every execution).
   */
  const oneRow = <T>(row: T, cols: Column<T>[]): string =>
    `(SELECT ${cols.map(([a, col]) => `${bind(col(row))}::text AS ${a}`).join(', ')}) AS u`;

  const [, owner, epochValue, eventCount, eventTypes, eventPayloads] = fenceAndEventParams(sessionId, fence, events);
  const sid = bind(sessionId);
  const epoch = `${bind(epochValue)}::bigint`;
  const ctes: string[] = [
    `fence AS (
   SELECT 1 AS held FROM session_leases
    WHERE session_id = ${sid}::uuid AND owner = ${bind(owner)}::text AND epoch = ${epoch} AND expires_at > now() FOR SHARE)`,
  ];
  let settledIds = '';
  if (shape.has('i')) {
    settledIds = `${bind(p.settled)}::uuid[]`;
    ctes.push(
      `claim AS (
   SELECT i.id FROM session_inbox i
    WHERE i.id = ANY(${settledIds}) AND i.session_id = ${sid}::uuid AND i.status = 'queued' AND EXISTS (SELECT 1 FROM fence)
      ${INBOX_LOCK_ORDER})`,
      `go AS (
   SELECT EXISTS (SELECT 1 FROM fence) AND (SELECT count(*) FROM claim) = cardinality(${settledIds}) AS ok)`,
      `settled AS (
   UPDATE session_inbox SET status = 'entered', settled_at = now()
    WHERE id IN (SELECT id FROM claim) AND session_id = ${sid}::uuid AND status = 'queued' AND (SELECT ok FROM go))`,
    );
  } else ctes.push(`go AS (SELECT EXISTS (SELECT 1 FROM fence) AS ok)`);
  if (shape.has('f'))
    ctes.push(`frames AS (
   INSERT INTO stack_frames ${insertColumns(STACK_FRAMES_INSERT)}
   SELECT u.id::uuid, u.sid::uuid, u.pfid::uuid, u.ptcid::uuid, u.agent, u.depth::integer, u.status, u.client, ${epoch}
     FROM ${unnest(p.frames, FRAME_COLUMNS)}
    WHERE (SELECT ok FROM go) ORDER BY u.n)`);
  const head = shape.has('e') || shape.has('t');
  if (head) {
    const count = shape.has('e') ? `${bind(eventCount)}::integer` : '';
    const set = ['updated_at = now()'];
    if (shape.has('e')) set.unshift(`last_seq = last_seq + ${count}`);
    if (shape.has('t')) {
      const turnId = `${bind(p.turn?.turnId ?? null)}::uuid`;
      set.push(
        `turn_state = ${bind(p.turn?.state)}::text`,
        `turn_id = COALESCE(${turnId}, turn_id)`,
        `turn_seq = CASE WHEN ${turnId} IS NULL THEN turn_seq ELSE last_seq END`,
      );
    }
    ctes.push(`head AS (
   UPDATE sessions SET ${set.join(', ')}
    WHERE id = ${sid}::uuid AND (SELECT ok FROM go)
    RETURNING last_seq, user_id, stop_requested_at IS NOT NULL AS stop)`);
    if (shape.has('e'))
      ctes.push(`appended AS (
   INSERT INTO session_events ${insertColumns(SESSION_EVENTS_INSERT)}
   SELECT ${sid}::uuid, head.last_seq - ${count} + u.n, u.t, u.p
     FROM head, unnest(${bind(eventTypes)}::text[], ${bind(eventPayloads)}::text[]) WITH ORDINALITY AS u(t, p, n))`);
  }
  if (shape.has('m'))
    ctes.push(`messages AS (
   INSERT INTO chat_history ${insertColumns(CHAT_HISTORY_INSERT)}
   SELECT u.id::uuid, u.sid::uuid, u.fid::uuid, u.role, u.content, u.reasoning, u.syn::boolean, u.status,
          u.meta::jsonb, u.cmid, u.itok::integer, u.otok::integer, ${epoch}, u.created::timestamptz,
          u.cost::numeric, u.est::boolean, u.client, u.model
     FROM ${unnest(p.messages, MESSAGE_COLUMNS)}
    WHERE (SELECT ok FROM go) ORDER BY u.n)`);
  if (shape.has('c'))
    ctes.push(`calls AS (
   INSERT INTO tool_calls (id, session_id, frame_id, message_id, idx, llm_call_id, name, arguments, status, result,
                           result_type, request_id, child_frame_id, preview_hash, judged_landing, epoch)
   SELECT u.id::uuid, u.sid::uuid, u.fid::uuid, u.mid::uuid, u.idx::integer, u.llm, u.name, u.args, u.status,
          u.result, u.rtype, u.req::uuid, u.child::uuid, u.ph, u.jl::jsonb, ${epoch}
     FROM ${unnest(p.calls, CALL_COLUMNS)}
    WHERE (SELECT ok FROM go) ORDER BY u.n)`);
  if (shape.has('u') || shape.has('U'))
    ctes.push(`updates AS (
   UPDATE tool_calls t SET status = u.status,
          result = CASE WHEN u.has_result::boolean THEN u.result ELSE t.result END,
          result_type = CASE WHEN u.has_rtype::boolean THEN u.rtype ELSE t.result_type END,
          request_id = CASE WHEN u.has_req::boolean THEN u.req::uuid ELSE t.request_id END,
          child_frame_id = CASE WHEN u.has_child::boolean THEN u.child::uuid ELSE t.child_frame_id END,
          preview_hash = CASE WHEN u.has_ph::boolean THEN u.ph ELSE t.preview_hash END,
          stale_reasks = COALESCE(u.stale::integer, t.stale_reasks),
          judged_landing = CASE WHEN u.has_jl::boolean THEN u.jl::jsonb ELSE t.judged_landing END,
          started_at = CASE WHEN u.status = 'running' AND t.started_at IS NULL THEN now() ELSE t.started_at END,
          finished_at = CASE WHEN u.status IN ('done', 'failed', 'rejected', 'cancelled', 'interrupted')
                             THEN now() ELSE t.finished_at END,
          epoch = ${epoch}
     FROM ${shape.has('u') ? oneRow(p.updates[0], UPDATE_COLUMNS) : unnest(p.updates, UPDATE_COLUMNS, false)}
    WHERE t.id = u.id::uuid AND (SELECT ok FROM go))`);
  if (shape.has('l'))
    ctes.push(`usage AS (
   INSERT INTO llm_usage (user_id, session_id, frame_id, message_id, purpose, client, model,
                          input_tokens, output_tokens, cached_input_tokens, estimated, cost_usd)
   SELECT u.uid::uuid, u.sid::uuid, u.fid::uuid, u.mid::uuid, u.purpose, u.client, u.model, u.itok::integer,
          u.otok::integer, u.ctok::integer, u.est::boolean, u.cost::numeric
     FROM ${unnest(p.usage, USAGE_COLUMNS)}
    WHERE (SELECT ok FROM go) ORDER BY u.n)`);
  ctes.push(`inbox AS (
   SELECT i.* FROM session_inbox i
    WHERE i.session_id = ${sid}::uuid AND i.status = 'queued'${shape.has('i') ? ` AND NOT (i.id = ANY(${settledIds}))` : ''} AND (SELECT ok FROM go))`);
  const sql = `WITH ${ctes.join(',\n ')}
SELECT (SELECT count(*) FROM fence)::int AS fenced,
       (SELECT ok FROM go) AS ok,
       ${shape.has('i') ? `(SELECT COALESCE(array_agg(id::text), '{}') FROM claim)` : `'{}'::text[]`} AS claimed,
       ${head ? '(SELECT last_seq FROM head)' : 'NULL::bigint'} AS last_seq,
       ${head ? '(SELECT user_id FROM head)' : 'NULL::uuid'} AS user_id,
       ${head ? '(SELECT stop FROM head)' : 'NULL::boolean'} AS stop,
       (SELECT COALESCE(json_agg(row_to_json(inbox) ORDER BY inbox.ord), '[]'::json) FROM inbox)::text AS inbox`;
  return { name: shapeName(shape), text: sql, values: pgParams(values) };
}

/** The inbox items a commit enters or consumes, in its order (`claim` and `go` in the statement). */
export function settledInboxIds(mutations: readonly Mutation[]): string[] {
  const ids: string[] = [];
  for (const m of mutations) if (m.kind === 'enterInbox' || m.kind === 'consumeInbox') ids.push(m.inboxId);
  return ids;
}
