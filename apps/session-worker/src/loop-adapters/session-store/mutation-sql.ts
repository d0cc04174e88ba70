import { deepToPgText } from '@skald/persistence/pg-text';
import { Queryable } from '@skald/persistence/query-rows';
import type { SessionInboxRow, StackFramesRow } from '@skald/persistence';
import { LeaseLostError, type Mutation } from '@skald/agent-loop';
import type { EntityManager } from 'typeorm';
import type { Fence } from './fence';
import { INBOX_LOCK_ORDER } from './inbox-lock-order';
import { landingJson, UsageRow } from './one-statement-commit';
import { exec, queryRows } from './pg-text-query';
import { CHAT_HISTORY_INSERT, insertColumns, STACK_FRAMES_INSERT } from '../../sessions/insert-columns.constants';

// The statements of the transaction path of a commit: one per mutation kind (`applyMutation`), the
// inbox rows it settles locked in queue order first, and the ledger rows that ride with it. The hot
// commits write the same rows in one statement instead (one-statement-commit.ts).
/** The messages a commit writes (their answered model calls' usage rides with them). */
export function messageIdsOf(mutations: readonly Mutation[]): string[] {
  const ids: string[] = [];
  for (const m of mutations) if (m.kind === 'appendMessage' || m.kind === 'enterInbox') ids.push(m.message.id);
  return ids;
}

/**
 * One `llm_usage` row: inside a commit (its message's), or alone by the LlmUsageRepository —
 * `unlessCommitted` then skips it when its message exists (the commit wrote the row with it).
 */
export async function insertUsage(db: Queryable, r: UsageRow, unlessCommitted = false): Promise<void> {
  await exec(
    db,
    `INSERT INTO llm_usage (user_id, session_id, frame_id, message_id, purpose, client, model,
                            input_tokens, output_tokens, cached_input_tokens, estimated, cost_usd)
     SELECT $1::uuid, $2::uuid, $3::uuid, $4::uuid, $5, $6, $7, $8::integer, $9::integer, $10::integer, $11::boolean,
            $12::numeric
      WHERE NOT ($13::boolean AND EXISTS (SELECT 1 FROM chat_history WHERE id = $4::uuid))`,
    [
      r.userId,
      r.sessionId,
      r.frameId,
      r.messageId,
      r.purpose,
      r.client,
      r.model,
      r.inputTokens,
      r.outputTokens,
      r.cachedInputTokens,
      r.estimated,
      r.costUsd,
      unlessCommitted,
    ],
  );
}

/**
 * Settles one queued inbox item of this session, only while it is queued HERE: an item moved to
 * another conversation after it was read (a `/new` re-homes the reset conversation's deliveries)
 * is neither entered nor discarded here — that would take it from the conversation it now belongs
 * to. Entering one that is gone refuses the commit; discarding one is a no-op (a /stop's discard
 * must not fail over an item that left).
 */
async function settleInbox(
  tx: EntityManager,
  sessionId: string,
  inboxId: string,
  status: Exclude<SessionInboxRow['status'], 'queued'>,
): Promise<void> {
  const r = await queryRows<Pick<SessionInboxRow, 'id'>>(
    tx,
    `UPDATE session_inbox SET status = $3, settled_at = now()
      WHERE id = $1 AND session_id = $2 AND status = 'queued' RETURNING id`,
    [inboxId, sessionId, status],
  );
  if (r.length === 0 && status === 'entered') throw notQueued(inboxId);
}

/**
 * The inbox rows a commit settles, locked up front in the one order every statement locks them in
 * (`INBOX_LOCK_ORDER`), not in the order the commit lists them: a racing `/new` moving the same
 * deliveries would otherwise deadlock with it. One item needs no statement (its update locks it).
 */
export async function lockInboxItems(tx: EntityManager, mutations: readonly Mutation[]): Promise<void> {
  const ids = inboxIdsSettledBy(mutations);
  if (ids.length < 2) return;
  await exec(tx, `SELECT 1 FROM session_inbox WHERE id = ANY($1::uuid[]) ${INBOX_LOCK_ORDER}`, [ids]);
}

/** The inbox items a commit settles (enters, consumes or discards), in the order it lists them. */
export function inboxIdsSettledBy(mutations: readonly Mutation[]): string[] {
  return mutations.flatMap((m) =>
    m.kind === 'enterInbox' || m.kind === 'consumeInbox' || m.kind === 'discardInbox' ? [m.inboxId] : [],
  );
}

/** An inbox item a commit enters or consumes is no longer queued in its session: the commit is refused. */
export function notQueued(inboxId: string): Error {
  return new Error(`inbox item ${inboxId} already settled or moved to another conversation`);
}

/** `eventCount`: the events of this commit, already appended (a new turn's `turn_seq` precedes them). */
export async function applyMutation(
  tx: EntityManager,
  sessionId: string,
  m: Mutation,
  epoch: number,
  eventCount: number,
): Promise<void> {
  switch (m.kind) {
    case 'appendMessage':
    case 'enterInbox': {
      const msg = m.message;
      if (m.kind === 'enterInbox') await settleInbox(tx, sessionId, m.inboxId, 'entered');
      await exec(
        tx,
        `INSERT INTO chat_history ${insertColumns(CHAT_HISTORY_INSERT)}
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
        [
          msg.id,
          msg.sessionId,
          msg.frameId,
          msg.role,
          msg.content,
          msg.reasoningContent,
          msg.isSynthetic,
          msg.status ?? 'ok',
          msg.attachments ? JSON.stringify(deepToPgText({ attachments: msg.attachments })) : null,
          msg.clientMessageId,
          msg.inputTokens,
          msg.outputTokens,
          epoch,
          msg.createdAt,
          msg.costUsd ?? null,
          msg.tokensEstimated ?? false,
          msg.llmClient ?? null,
          msg.llmModel ?? null,
        ],
      );
      return;
    }
    case 'markMessageFailed':
      await exec(tx, `UPDATE chat_history SET status = 'failed' WHERE id = $1`, [m.messageId]);
      return;
    case 'supersedeMessages':
      await exec(
        tx,
        `UPDATE chat_history SET status = 'superseded', superseded_at = now() WHERE id = ANY($1::uuid[])`,
        [m.messageIds],
      );
      return;
    case 'discardInbox':
      await settleInbox(tx, sessionId, m.inboxId, 'discarded');
      return;
    case 'consumeInbox':
      await settleInbox(tx, sessionId, m.inboxId, 'entered');
      return;
    case 'createToolCall': {
      const c = m.call;
      await exec(
        tx,
        `INSERT INTO tool_calls (id, session_id, frame_id, message_id, idx, llm_call_id, name, arguments, status, result,
                                 result_type, request_id, child_frame_id, preview_hash, epoch, judged_landing)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16::jsonb)`,
        [
          c.id,
          c.sessionId,
          c.frameId,
          c.messageId,
          c.index,
          c.llmCallId,
          c.name,
          c.argumentsText,
          c.status,
          c.result,
          c.resultType,
          c.requestId,
          c.childFrameId,
          c.previewHash ?? null,
          epoch,
          landingJson(c.judgedLanding),
        ],
      );
      return;
    }
    case 'updateToolCall': {
      const p = m.patch;
      await exec(
        tx,
        `UPDATE tool_calls SET status = $2,
            result = CASE WHEN $3::boolean THEN $4 ELSE result END,
            result_type = CASE WHEN $5::boolean THEN $6 ELSE result_type END,
            request_id = CASE WHEN $7::boolean THEN $8::uuid ELSE request_id END,
            child_frame_id = CASE WHEN $9::boolean THEN $10::uuid ELSE child_frame_id END,
            preview_hash = CASE WHEN $12::boolean THEN $13 ELSE preview_hash END,
            stale_reasks = COALESCE($14::integer, stale_reasks),
            judged_landing = CASE WHEN $15::boolean THEN $16::jsonb ELSE judged_landing END,
            started_at = CASE WHEN $2 = 'running' AND started_at IS NULL THEN now() ELSE started_at END,
            finished_at = CASE WHEN $2 IN ('done', 'failed', 'rejected', 'cancelled', 'interrupted') THEN now() ELSE finished_at END,
            epoch = $11
          WHERE id = $1`,
        [
          m.id,
          p.status,
          p.result !== undefined,
          p.result ?? null,
          p.resultType !== undefined,
          p.resultType ?? null,
          p.requestId !== undefined,
          p.requestId ?? null,
          p.childFrameId !== undefined,
          p.childFrameId ?? null,
          epoch,
          p.previewHash !== undefined,
          p.previewHash ?? null,
          p.staleReasks ?? null,
          p.judgedLanding !== undefined,
          landingJson(p.judgedLanding),
        ],
      );
      return;
    }
    case 'openFrame': {
      const f = m.frame;
      await exec(
        tx,
        `INSERT INTO stack_frames ${insertColumns(STACK_FRAMES_INSERT)}
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [f.id, f.sessionId, f.parentFrameId, f.parentToolCallId, f.agentId, f.depth, f.status, f.clientPin, epoch],
      );
      return;
    }
    case 'closeFrame': {
      const r = await queryRows<Pick<StackFramesRow, 'id'>>(
        tx,
        `UPDATE stack_frames SET status = 'closed', closed_at = now(), epoch = $2 WHERE id = $1 AND status = 'active' RETURNING id`,
        [m.frameId, epoch],
      );
      if (r.length === 0) throw new Error(`frame ${m.frameId} is not active`);
      return;
    }
    case 'setScratchpad':
      if (m.value === null) {
        await exec(tx, `DELETE FROM session_scratchpad WHERE scratchpad_session_id = $1 AND key = $2`, [
          m.scratchpadSessionId,
          m.key,
        ]);
      } else {
        await exec(
          tx,
          `INSERT INTO session_scratchpad (scratchpad_session_id, key, value) VALUES ($1, $2, $3)
           ON CONFLICT (scratchpad_session_id, key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
          [m.scratchpadSessionId, m.key, m.value],
        );
      }
      return;
    case 'setTodos':
      await exec(
        tx,
        `INSERT INTO session_todos (session_id, frame_id, todos) VALUES ($1, $2, $3)
         ON CONFLICT (session_id, frame_id) DO UPDATE SET todos = EXCLUDED.todos, updated_at = now()`,
        [m.sessionId, m.frameId, JSON.stringify(deepToPgText(m.todos))],
      );
      return;
    case 'grantTools': {
      const sessionId = m.scope.kind === 'session' ? m.scope.sessionId : null;
      const frameId = m.scope.kind === 'frame' ? m.scope.frameId : null;
      for (const g of m.groups) {
        await exec(
          tx,
          `INSERT INTO tool_grants (session_id, frame_id, group_name)
           VALUES (COALESCE($1::uuid, (SELECT session_id FROM stack_frames WHERE id = $2::uuid)), $2::uuid, $3)
           ON CONFLICT DO NOTHING`,
          [sessionId, frameId, g],
        );
      }
      return;
    }
    case 'setCompaction': {
      const s = m.summary;
      await exec(
        tx,
        `INSERT INTO compaction_summaries (session_id, frame_id, summary, boundary_message_id)
         SELECT session_id, id, $2, $3 FROM stack_frames WHERE id = $1
         ON CONFLICT (session_id, frame_id) DO UPDATE SET summary = EXCLUDED.summary,
           boundary_message_id = EXCLUDED.boundary_message_id, updated_at = now()`,
        [s.frameId, s.summary, s.boundaryMessageId],
      );
      return;
    }
    case 'setTurnState':
      await exec(
        tx,
        `UPDATE sessions SET turn_state = $2, turn_id = COALESCE($3, turn_id),
                turn_seq = CASE WHEN $3 IS NULL THEN turn_seq ELSE last_seq - $4 END, updated_at = now()
          WHERE id = $1`,
        [m.sessionId, m.state, m.turnId ?? null, eventCount],
      );
      return;
    default: {
      const never: never = m;
      throw new Error(`unknown mutation ${JSON.stringify(never)}`);
    }
  }
}

/**
 * Drops every tool grant of the session (the root's and every frame's) under `fence`, in one
 * statement that writes nothing unless the lease is still held under its epoch; the groups dropped,
 * sorted and once each. Throws `LeaseLostError` when the lease is not held.
 */
export async function revokeGrants(db: Queryable, sessionId: string, fence: Fence): Promise<string[]> {
  const rows = await queryRows<{ fenced: number; groups: unknown[] }>(
    db,
    `WITH fence AS (
         SELECT epoch FROM session_leases
          WHERE session_id = $1 AND owner = $2 AND epoch = $3 AND expires_at > now() FOR SHARE),
       gone AS (
         DELETE FROM tool_grants WHERE session_id = $1 AND EXISTS (SELECT 1 FROM fence) RETURNING group_name)
       SELECT (SELECT count(*) FROM fence)::int AS fenced,
              COALESCE((SELECT json_agg(DISTINCT group_name ORDER BY group_name) FROM gone), '[]'::json) AS groups`,
    [sessionId, fence.owner, fence.epoch],
  );
  if (Number(rows[0]?.fenced) === 0)
    throw new LeaseLostError(`lease of session ${sessionId} lost (epoch ${fence.epoch})`);
  return rows[0].groups.map(String);
}
