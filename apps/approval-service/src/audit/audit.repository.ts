import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { fromPgText, pgParams, toPgText } from '@skald/persistence/pg-text';
import { Queryable, queryRows } from '@skald/persistence/query-rows';
import type { ApprovalAuditRow } from '@skald/persistence';

export interface AuditEntry {
  userId: string;
  sessionId: string | null;
  toolCallId: string | null;
  requestId: string | null;
  toolName: string;
  argsDigest: string;
  decision: ApprovalAuditRow['decision'];
  by: ApprovalAuditRow['by'];
  actorUserId: string | null;
  /** Where a human answered (`by: "human"` only). */
  channel?: ApprovalAuditRow['channel'];
  ruleId: string | null;
  note: string | null;
  /** A human approved the call with edited arguments: their digest and the diff of each changed argument. */
  edit?: { argsDigest: string; diff: string } | null;
  /** When the decision was taken (buffered entries are written later); default: the insert's time. */
  at?: Date;
}

/** What a page of the audit is narrowed to (every field optional but the scope and the bound). */
export interface AuditFilter {
  /** The caller's scope: their own rows; null = an admin, every user's. */
  userId: string | null;
  sessionId?: string;
  filterUserId?: string;
  tool?: string;
  decision?: ApprovalAuditRow['decision'];
  since?: string;
  until?: string;
  before?: string;
  limit: number;
}

export interface StoredAudit extends AuditEntry {
  id: string;
  at: Date;
}

@Injectable()
export class AuditRepository {
  constructor(private readonly ds: Database) {}

  /**
   * One INSERT for a batch, its columns sent as arrays (a fixed 16 parameters whatever the batch
   * size). Text goes through the pg-text codec: a tool name is the model's (or an MCP server's) and
   * may hold NUL or a lone surrogate, which Postgres text cannot; raw, one such name failed the
   * whole batch.
   */
  async insert(entries: readonly AuditEntry[], db: Queryable = this.ds): Promise<void> {
    if (entries.length === 0) return;
    const now = new Date();
    const column = <T>(pick: (e: AuditEntry) => T): T[] => entries.map(pick);
    await db.query(
      `INSERT INTO approval_audit (id, user_id, session_id, tool_call_id, request_id, tool_name, args_digest, decision, by, actor_user_id, rule_id, note, at,
                                   edited_args_digest, edit_diff, channel)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::uuid[], $6::text[], $7::text[], $8::text[],
                            $9::text[], $10::uuid[], $11::uuid[], $12::text[], $13::timestamptz[], $14::text[], $15::text[],
                            $16::text[])`,
      pgParams([
        entries.map(() => randomUUID()),
        column((e) => e.userId),
        column((e) => e.sessionId),
        column((e) => e.toolCallId),
        column((e) => e.requestId),
        column((e) => e.toolName),
        column((e) => e.argsDigest),
        column((e) => e.decision),
        column((e) => e.by),
        column((e) => e.actorUserId),
        column((e) => e.ruleId),
        column((e) => e.note),
        column((e) => e.at ?? now),
        column((e) => e.edit?.argsDigest ?? null),
        column((e) => e.edit?.diff ?? null),
        column((e) => e.channel ?? null),
      ]),
    );
  }

  /**
   * The rule whose Require asked about each of these calls (the latest `require` row of the call
   * that names a rule), with its stored name (null: a built-in or deleted rule): one statement,
   * each call one lookup of its session's rows.
   */
  async askingRules(
    calls: ReadonlyArray<{ sessionId: string; toolCallId: string }>,
  ): Promise<Map<string, { ruleId: string; ruleName: string | null }>> {
    if (calls.length === 0) return new Map();
    const rows = await queryRows<{ tool_call_id: string; rule_id: string; name: string | null }>(
      this.ds,
      `SELECT q.tool_call_id, a.rule_id, r.name
         FROM unnest($1::uuid[], $2::uuid[]) AS q(session_id, tool_call_id)
         CROSS JOIN LATERAL (
           SELECT x.rule_id FROM approval_audit x
            WHERE x.session_id = q.session_id AND x.tool_call_id = q.tool_call_id
              AND x.decision = 'require' AND x.rule_id IS NOT NULL
            ORDER BY x.ord DESC
            LIMIT 1
         ) a
         LEFT JOIN approval_rules r ON r.id = a.rule_id`,
      [calls.map((c) => c.sessionId), calls.map((c) => c.toolCallId)],
    );
    return new Map(rows.map((r) => [r.tool_call_id, { ruleId: r.rule_id, ruleName: r.name }]));
  }

  /**
   * A page of the audit, newest first, keyset-paged on (`at`, `ord`): `before` is the id of the
   * last row of the previous page (a row the scope does not hold answers an empty page). Each row
   * with the name of the rule it names, when that rule is stored (`ruleName`). `userId: null` = an admin: every
   * user's rows; `filterUserId` narrows to one user's.
   */
  async page(q: AuditFilter): Promise<{ items: Array<StoredAudit & { ruleName: string | null }>; hasMore: boolean }> {
    const rows = await queryRows<ApprovalAuditRow & { rule_name: string | null }>(
      this.ds,
      `SELECT a.*, r.name AS rule_name
         FROM approval_audit a
         LEFT JOIN approval_rules r ON r.id = a.rule_id
        WHERE ($1::uuid IS NULL OR a.user_id = $1)
          AND ($2::uuid IS NULL OR a.session_id = $2)
          AND ($3::uuid IS NULL OR a.user_id = $3)
          AND ($4::text IS NULL OR a.tool_name = $4)
          AND ($5::text IS NULL OR a.decision = $5)
          AND ($6::timestamptz IS NULL OR a.at >= $6)
          AND ($7::timestamptz IS NULL OR a.at < $7)
          AND ($8::uuid IS NULL OR (a.at, a.ord) < (SELECT b.at, b.ord FROM approval_audit b
                                                     WHERE b.id = $8 AND ($1::uuid IS NULL OR b.user_id = $1)))
        ORDER BY a.at DESC, a.ord DESC
        LIMIT $9`,
      [
        q.userId,
        q.sessionId ?? null,
        q.filterUserId ?? null,
        q.tool === undefined ? null : toPgText(q.tool),
        q.decision ?? null,
        q.since ?? null,
        q.until ?? null,
        q.before ?? null,
        q.limit + 1,
      ],
    );
    return {
      hasMore: rows.length > q.limit,
      items: rows.slice(0, q.limit).map((r) => ({
        id: r.id,
        at: r.at,
        ruleName: r.rule_name,
        userId: r.user_id,
        sessionId: r.session_id,
        toolCallId: r.tool_call_id,
        requestId: r.request_id,
        toolName: fromPgText(r.tool_name),
        argsDigest: r.args_digest,
        decision: r.decision,
        by: r.by,
        actorUserId: r.actor_user_id,
        channel: r.channel,
        ruleId: r.rule_id,
        note: fromPgText(r.note),
        edit:
          r.edited_args_digest !== null && r.edit_diff !== null
            ? { argsDigest: r.edited_args_digest, diff: fromPgText(r.edit_diff) }
            : null,
      })),
    };
  }
}
