import { deepToPgText, pgParams } from '@skald/persistence';
import type { Mutation, NewFrame, NewMessage, NewToolCall, SessionEventDraft, ToolCallPatch } from '@skald/agent-loop';
import { INBOX_LOCK_ORDER } from './inbox-lock-order';

/**
 * The hot commits of a turn (its first commit: the inbox items entering, the root frame of a fresh
 * conversation, the turn state; and each round's: the model's answer with its calls, a call
 * `running`, a call's result, the final answer) as ONE statement: a data-modifying CTE whose every
 * write is conditioned on `go` — the fence (`FOR SHARE` on the lease row under this epoch) AND every
 * inbox item the commit settles still queued in this session (`claim` locks them `FOR UPDATE`, so
 * a racing /new that moves one is waited for and seen). So it is one implicit transaction — no
 * BEGIN/COMMIT round trips — and a fenced-out commit, or one whose item was already settled or
 * moved, writes nothing (the caller then gets the transaction path's error). The statement's text is
 * the same for every commit (absent kinds are empty arrays), so it is prepared once per connection.
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
  purpose: 'round' | 'compaction' | 'title';
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

export const ONE_STATEMENT_COMMIT_NAME = 'skald_commit_v4';

export const ONE_STATEMENT_COMMIT_SQL = `WITH fence AS (
   SELECT 1 AS held FROM session_leases
    WHERE session_id = $1::uuid AND owner = $2::text AND epoch = $3::bigint AND expires_at > now() FOR SHARE),
 claim AS (
   SELECT i.id FROM session_inbox i
    WHERE i.id = ANY($65::uuid[]) AND i.session_id = $1::uuid AND i.status = 'queued' AND EXISTS (SELECT 1 FROM fence)
      ${INBOX_LOCK_ORDER}),
 go AS (
   SELECT EXISTS (SELECT 1 FROM fence) AND (SELECT count(*) FROM claim) = cardinality($65::uuid[]) AS ok),
 settled AS (
   UPDATE session_inbox SET status = 'entered', settled_at = now()
    WHERE id IN (SELECT id FROM claim) AND session_id = $1::uuid AND status = 'queued' AND (SELECT ok FROM go)),
 frames AS (
   INSERT INTO stack_frames (id, session_id, parent_frame_id, parent_tool_call_id, agent_id, depth, status, client, epoch)
   SELECT u.id::uuid, u.sid::uuid, u.pfid::uuid, u.ptcid::uuid, u.agent, u.depth::integer, u.status, u.client, $3::bigint
     FROM unnest($66::text[], $67::text[], $68::text[], $69::text[], $70::text[], $71::text[], $72::text[], $73::text[])
          WITH ORDINALITY AS u(id, sid, pfid, ptcid, agent, depth, status, client, n)
    WHERE (SELECT ok FROM go) ORDER BY u.n),
 head AS (
   UPDATE sessions SET last_seq = last_seq + $4::integer, updated_at = now(),
          turn_state = COALESCE($7::text, turn_state), turn_id = COALESCE($8::uuid, turn_id),
          turn_seq = CASE WHEN $8::uuid IS NULL THEN turn_seq ELSE last_seq END
    WHERE id = $1::uuid AND ($4::integer > 0 OR $7::text IS NOT NULL) AND (SELECT ok FROM go)
    RETURNING last_seq, user_id, stop_requested_at IS NOT NULL AS stop),
 appended AS (
   INSERT INTO session_events (session_id, seq, type, payload)
   SELECT $1::uuid, head.last_seq - $4::integer + u.n, u.t, u.p
     FROM head, unnest($5::text[], $6::text[]) WITH ORDINALITY AS u(t, p, n)),
 messages AS (
   INSERT INTO chat_history (id, session_id, frame_id, role, content, reasoning, is_synthetic, status, metadata,
                             client_message_id, input_tokens, output_tokens, epoch, created_at,
                             cost_usd, tokens_estimated, llm_client, llm_model)
   SELECT u.id::uuid, u.sid::uuid, u.fid::uuid, u.role, u.content, u.reasoning, u.syn::boolean, u.status,
          u.meta::jsonb, u.cmid, u.itok::integer, u.otok::integer, $3::bigint, u.created::timestamptz,
          u.cost::numeric, u.est::boolean, u.client, u.model
     FROM unnest($9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[],
                 $16::text[], $17::text[], $18::text[], $19::text[], $20::text[], $21::text[], $22::text[],
                 $23::text[], $24::text[], $25::text[])
          WITH ORDINALITY AS u(id, sid, fid, role, content, reasoning, syn, status, meta, cmid, itok, otok,
                               created, cost, est, client, model, n)
    WHERE (SELECT ok FROM go) ORDER BY u.n),
 calls AS (
   INSERT INTO tool_calls (id, session_id, frame_id, message_id, idx, llm_call_id, name, arguments, status, result,
                           result_type, request_id, child_frame_id, preview_hash, epoch)
   SELECT u.id::uuid, u.sid::uuid, u.fid::uuid, u.mid::uuid, u.idx::integer, u.llm, u.name, u.args, u.status,
          u.result, u.rtype, u.req::uuid, u.child::uuid, u.ph, $3::bigint
     FROM unnest($26::text[], $27::text[], $28::text[], $29::text[], $30::text[], $31::text[], $32::text[],
                 $33::text[], $34::text[], $35::text[], $36::text[], $37::text[], $38::text[], $39::text[])
          WITH ORDINALITY AS u(id, sid, fid, mid, idx, llm, name, args, status, result, rtype, req, child, ph, n)
    WHERE (SELECT ok FROM go) ORDER BY u.n),
 updates AS (
   UPDATE tool_calls t SET status = u.status,
          result = CASE WHEN u.has_result::boolean THEN u.result ELSE t.result END,
          result_type = CASE WHEN u.has_rtype::boolean THEN u.rtype ELSE t.result_type END,
          request_id = CASE WHEN u.has_req::boolean THEN u.req::uuid ELSE t.request_id END,
          child_frame_id = CASE WHEN u.has_child::boolean THEN u.child::uuid ELSE t.child_frame_id END,
          preview_hash = CASE WHEN u.has_ph::boolean THEN u.ph ELSE t.preview_hash END,
          stale_reasks = COALESCE(u.stale::integer, t.stale_reasks),
          started_at = CASE WHEN u.status = 'running' AND t.started_at IS NULL THEN now() ELSE t.started_at END,
          finished_at = CASE WHEN u.status IN ('done', 'failed', 'rejected', 'cancelled', 'interrupted')
                             THEN now() ELSE t.finished_at END,
          epoch = $3::bigint
     FROM unnest($40::text[], $41::text[], $42::text[], $43::text[], $44::text[], $45::text[], $46::text[],
                 $47::text[], $48::text[], $49::text[], $50::text[], $51::text[], $52::text[])
          AS u(id, status, has_result, result, has_rtype, rtype, has_req, req, has_child, child, has_ph, ph, stale)
    WHERE t.id = u.id::uuid AND (SELECT ok FROM go)),
 usage AS (
   INSERT INTO llm_usage (user_id, session_id, frame_id, message_id, purpose, client, model,
                          input_tokens, output_tokens, cached_input_tokens, estimated, cost_usd)
   SELECT u.uid::uuid, u.sid::uuid, u.fid::uuid, u.mid::uuid, u.purpose, u.client, u.model, u.itok::integer,
          u.otok::integer, u.ctok::integer, u.est::boolean, u.cost::numeric
     FROM unnest($53::text[], $54::text[], $55::text[], $56::text[], $57::text[], $58::text[], $59::text[],
                 $60::text[], $61::text[], $62::text[], $63::text[], $64::text[])
          WITH ORDINALITY AS u(uid, sid, fid, mid, purpose, client, model, itok, otok, ctok, est, cost, n)
    WHERE (SELECT ok FROM go) ORDER BY u.n),
 inbox AS (
   SELECT i.* FROM session_inbox i
    WHERE i.session_id = $1::uuid AND i.status = 'queued' AND NOT (i.id = ANY($65::uuid[])) AND (SELECT ok FROM go))
SELECT (SELECT count(*) FROM fence)::int AS fenced,
       (SELECT ok FROM go) AS ok,
       (SELECT COALESCE(array_agg(id::text), '{}') FROM claim) AS claimed,
       (SELECT last_seq FROM head) AS last_seq,
       (SELECT user_id FROM head) AS user_id,
       (SELECT stop FROM head) AS stop,
       (SELECT COALESCE(json_agg(row_to_json(inbox) ORDER BY inbox.ord), '[]'::json) FROM inbox)::text AS inbox`;

const text = (v: string | null | undefined): string | null => (v === null || v === undefined ? null : v);
const str = (v: number | boolean | null | undefined): string | null =>
  v === null || v === undefined ? null : String(v);

/** Column arrays of `rows` in the order of `columns` (each value as text, or null). */
function columns<T>(rows: readonly T[], cols: ((r: T) => string | null)[]): (string | null)[][] {
  return cols.map((col) => rows.map(col));
}

/** The parameters of {@link ONE_STATEMENT_COMMIT_SQL}, through the text codec (`pgParams`). */
/**
 * `$1`–`$6` of both fenced statements (this one and the store's fence-and-append): the session, the
 * fence's owner and epoch, and the events (count, types, JSON payloads).
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

export function oneStatementParams(
  sessionId: string,
  fence: { owner: string; epoch: number },
  mutations: readonly Mutation[],
  events: readonly SessionEventDraft[],
  usage: readonly UsageRow[],
): unknown[] {
  const messages: NewMessage[] = [];
  const calls: NewToolCall[] = [];
  const updates: { id: string; patch: ToolCallPatch }[] = [];
  const frames: NewFrame[] = [];
  let turn: { state: string; turnId: string | null } | null = null;
  for (const m of mutations) {
    if (m.kind === 'appendMessage' || m.kind === 'enterInbox') messages.push(m.message);
    else if (m.kind === 'consumeInbox') continue;
    else if (m.kind === 'openFrame') frames.push(m.frame);
    else if (m.kind === 'createToolCall') calls.push(m.call);
    else if (m.kind === 'updateToolCall') updates.push({ id: m.id, patch: m.patch });
    else if (m.kind === 'setTurnState') turn = { state: m.state, turnId: m.turnId ?? null };
    else throw new Error(`mutation ${m.kind} does not fit one statement`);
  }
  const has = (v: unknown): string => String(v !== undefined);
  return pgParams([
    ...fenceAndEventParams(sessionId, fence, events),
    turn?.state ?? null,
    turn?.turnId ?? null,
    ...columns(messages, [
      (m) => m.id,
      (m) => m.sessionId,
      (m) => m.frameId,
      (m) => m.role,
      (m) => m.content,
      (m) => text(m.reasoningContent),
      (m) => str(m.isSynthetic),
      (m) => m.status ?? 'ok',
      (m) => (m.attachments ? JSON.stringify(deepToPgText({ attachments: m.attachments })) : null),
      (m) => text(m.clientMessageId),
      (m) => str(m.inputTokens),
      (m) => str(m.outputTokens),
      (m) => m.createdAt,
      (m) => str(m.costUsd),
      (m) => str(m.tokensEstimated ?? false),
      (m) => text(m.llmClient),
      (m) => text(m.llmModel),
    ]),
    ...columns(calls, [
      (c) => c.id,
      (c) => c.sessionId,
      (c) => c.frameId,
      (c) => c.messageId,
      (c) => String(c.index),
      (c) => c.llmCallId,
      (c) => c.name,
      (c) => c.argumentsText,
      (c) => c.status,
      (c) => text(c.result),
      (c) => text(c.resultType),
      (c) => text(c.requestId),
      (c) => text(c.childFrameId),
      (c) => text(c.previewHash),
    ]),
    ...columns(updates, [
      (u) => u.id,
      (u) => u.patch.status,
      (u) => has(u.patch.result),
      (u) => text(u.patch.result),
      (u) => has(u.patch.resultType),
      (u) => text(u.patch.resultType),
      (u) => has(u.patch.requestId),
      (u) => text(u.patch.requestId),
      (u) => has(u.patch.childFrameId),
      (u) => text(u.patch.childFrameId),
      (u) => has(u.patch.previewHash),
      (u) => text(u.patch.previewHash),
      (u) => str(u.patch.staleReasks),
    ]),
    ...columns(usage, [
      (r) => r.userId,
      (r) => r.sessionId,
      (r) => text(r.frameId),
      (r) => text(r.messageId),
      (r) => r.purpose,
      (r) => r.client,
      (r) => r.model,
      (r) => String(r.inputTokens),
      (r) => String(r.outputTokens),
      (r) => String(r.cachedInputTokens),
      (r) => String(r.estimated),
      (r) => str(r.costUsd),
    ]),
    settledInboxIds(mutations),
    ...columns(frames, [
      (f) => f.id,
      (f) => f.sessionId,
      (f) => text(f.parentFrameId),
      (f) => text(f.parentToolCallId),
      (f) => f.agentId,
      (f) => String(f.depth),
      (f) => f.status,
      (f) => text(f.clientPin),
    ]),
  ]);
}

/** The inbox items a commit enters or consumes, in its order (`claim` and `go` in the statement). */
export function settledInboxIds(mutations: readonly Mutation[]): string[] {
  const ids: string[] = [];
  for (const m of mutations) if (m.kind === 'enterInbox' || m.kind === 'consumeInbox') ids.push(m.inboxId);
  return ids;
}
