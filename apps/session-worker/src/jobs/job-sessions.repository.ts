import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { decodeRow, deepToPgText, fromJsonText, fromPgText } from '@skald/persistence/pg-text';
import { queryRows } from '@skald/persistence/query-rows';
import type { SessionEventsRow, SessionInboxRow, SessionsRow } from '@skald/persistence';
import { INBOX_LOCK_ORDER } from '../loop-adapters/session-store/inbox-lock-order';
import { inheritedPolicy, policyOfJob, type JobPolicySource, type JobSessionPolicy } from './job-policy';
import type { Role } from '@skald/contracts';

/** The one column a statement that only proves a row exists returns. */
type Exists = { '?column?': number };

/** The session worker's side of scheduler jobs: their ephemeral sessions and system deliveries. */
@Injectable()
export class JobSessionsRepository {
  constructor(private readonly ds: Database) {}

  /**
   * A job's ephemeral session (its id is the run id: idempotent) with the prompt in its inbox.
   * Never the active session of a source; an async task reads and writes its parent's scratchpad.
   * Its policy comes from the job's RunContext or, for an async task, from the parent's row read in
   * this transaction (`FOR SHARE`: a concurrent change of the parent's RunContext or its deletion
   * orders before or after). `parent_gone`: the parent does not exist for this user and nothing was
   * created; `exists`: the session was created before (its policy is the one it got then).
   */
  async createJobSession(o: {
    userId: string;
    role: Role;
    runId: string;
    source: string;
    agentId: string;
    prompt: string;
    policy: JobPolicySource;
    autoDeny: boolean;
    /** The prompt is system-made (a tic's): it enters as a synthetic row, not echoed nor shown. */
    synthetic: boolean;
    scratchpadSessionId: string | null;
    clientPin: string | null;
  }): Promise<{ outcome: 'created' | 'exists' | 'parent_gone' }> {
    return this.ds.transaction(async (tx) => {
      let policy: JobSessionPolicy;
      if (o.policy.from === 'parent') {
        const [parent] = await queryRows<Pick<SessionsRow, 'security_group' | 'run_context'>>(
          tx,
          `SELECT security_group, run_context FROM sessions WHERE id = $1 AND user_id = $2 FOR SHARE`,
          [o.policy.parentSessionId, o.userId],
        );
        if (!parent) {
          const mine = await queryRows<Exists>(tx, `SELECT 1 FROM sessions WHERE id = $1 AND user_id = $2`, [
            o.runId,
            o.userId,
          ]);
          return { outcome: mine.length > 0 ? ('exists' as const) : ('parent_gone' as const) };
        }
        policy = inheritedPolicy(parent);
      } else policy = policyOfJob(o.policy.runContext);
      const inserted = await queryRows<Pick<SessionsRow, 'id'>>(
        tx,
        `INSERT INTO sessions (id, user_id, source, agent_id, owner_role, is_interactive, is_ephemeral, auto_deny_approvals,
                               is_active, scratchpad_session_id, security_group, run_context, client_pin)
         VALUES ($1, $2, $3, $4, $5, false, true, $6, false, coalesce($7::uuid, $1), $8, $9, $10)
         ON CONFLICT (id) DO NOTHING RETURNING id`,
        [
          o.runId,
          o.userId,
          o.source,
          o.agentId,
          o.role,
          o.autoDeny,
          o.scratchpadSessionId,
          policy.securityGroup,
          JSON.stringify(policy.runContext),
          o.clientPin,
        ],
      );
      if (inserted.length === 0) return { outcome: 'exists' as const };
      await tx.query(
        `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery, is_synthetic)
         VALUES ($1, $1, $2, $3, $4, 'queue', $5)`,
        [o.runId, o.userId, `job-prompt:${o.runId}`, o.prompt, o.synthetic],
      );
      return { outcome: 'created' as const };
    });
  }

  async session(q: { userId: string; sessionId: string }): Promise<SessionsRow | null> {
    const rows = await queryRows<SessionsRow>(this.ds, `SELECT * FROM sessions WHERE id = $1 AND user_id = $2`, [
      q.sessionId,
      q.userId,
    ]);
    return rows[0] ?? null;
  }

  async hasQueuedInput(sessionId: string): Promise<boolean> {
    const rows = await queryRows<Exists>(
      this.ds,
      `SELECT 1 FROM session_inbox WHERE session_id = $1 AND status = 'queued' LIMIT 1`,
      [sessionId],
    );
    return rows.length > 0;
  }

  /** The last turn ending the session recorded (`done`, or an `error` event of the turn's end). */
  async lastEnding(sessionId: string): Promise<{ type: string; payload: Record<string, unknown> } | null> {
    const rows = await queryRows<Pick<SessionEventsRow, 'type' | 'payload'>>(
      this.ds,
      `SELECT type, payload FROM session_events WHERE session_id = $1 AND type IN ('done', 'error')
        ORDER BY seq DESC LIMIT 1`,
      [sessionId],
    );
    const r = rows[0];
    return r ? { type: r.type, payload: decodeRow(fromJsonText<Record<string, unknown>>(r.payload)) } : null;
  }

  /** What the run produced so far: the assistant texts and the last tool results (for a failure or a kill). */
  async partialOutput(sessionId: string, max = 8_000): Promise<string> {
    const rows = await queryRows<{ name: string | null; text: string }>(
      this.ds,
      `SELECT name, text FROM (
         SELECT h.created_at AS at, NULL AS name, h.content AS text FROM chat_history h
          WHERE h.session_id = $1 AND h.role = 'assistant' AND h.content <> ''
         UNION ALL
         SELECT t.created_at, t.name, t.result FROM tool_calls t
          WHERE t.session_id = $1 AND t.status = 'done' AND t.result IS NOT NULL
       ) x ORDER BY at`,
      [sessionId],
    );
    const all = rows
      .map((r) => (r.name === null ? fromPgText(r.text) : `${fromPgText(r.name)}: ${fromPgText(r.text)}`))
      .join('\n');
    return all.length > max ? all.slice(all.length - max) : all;
  }

  /**
   * A system delivery into a session's inbox, idempotent on the delivery id. `reset`: the session
   * is no longer its source's active conversation (nothing stored). The session row is read
   * `FOR SHARE`, so a concurrent `/new` (which updates it) orders before or after the insert.
   */
  async deliver(o: {
    userId: string;
    sessionId: string;
    deliveryId: string;
    toolName: string;
    argumentsText: string;
    result: string;
  }): Promise<{ outcome: 'stored' | 'duplicate' | 'reset' | 'not_found' }> {
    return this.ds
      .transaction(async (tx) => {
        const [session] = await queryRows<{ live: boolean }>(
          tx,
          `SELECT (is_active OR is_ephemeral) AS live FROM sessions WHERE id = $1 AND user_id = $2 FOR SHARE`,
          [o.sessionId, o.userId],
        );
        if (!session) return { outcome: 'not_found' as const };
        const rows = await queryRows<Pick<SessionInboxRow, 'id'>>(
          tx,
          `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery, is_synthetic, tool_result)
         VALUES (gen_random_uuid(), $1, $2, $3, '', 'steer', true, $4)
         ON CONFLICT (user_id, client_message_id) DO NOTHING RETURNING id`,
          [
            o.sessionId,
            o.userId,
            `job-delivery:${o.deliveryId}`,
            JSON.stringify(deepToPgText({ tool_name: o.toolName, arguments_text: o.argumentsText, result: o.result })),
          ],
        );
        if (rows.length === 0) return { outcome: 'duplicate' as const };
        if (!session.live) throw new SessionWasReset();
        return { outcome: 'stored' as const };
      })
      .catch((e: unknown) => {
        if (e instanceof SessionWasReset) return { outcome: 'reset' as const };
        throw e;
      });
  }

  /** System deliveries still queued in `fromSessionId` move to `toSessionId` (same user). */
  async moveQueuedDeliveries(o: { userId: string; fromSessionId: string; toSessionId: string }): Promise<number> {
    const rows = await queryRows<Pick<SessionInboxRow, 'id'>>(
      this.ds,
      `WITH moving AS (
         SELECT id FROM session_inbox
          WHERE session_id = $2 AND user_id = $1 AND status = 'queued' AND tool_result IS NOT NULL ${INBOX_LOCK_ORDER})
       UPDATE session_inbox i SET session_id = $3 FROM moving WHERE i.id = moving.id RETURNING i.id`,
      [o.userId, o.fromSessionId, o.toSessionId],
    );
    return rows.length;
  }
}

/** Rolls the delivery's insert back: its session was reset (the duplicate check comes first). */
class SessionWasReset extends Error {}
