import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { fromPgText, pgParams } from '@skald/persistence/pg-text';
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

export interface StoredAudit extends AuditEntry {
  id: string;
  at: Date;
}

@Injectable()
export class AuditRepository {
  constructor(private readonly ds: DataSource) {}

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

  /** `userId: null` = an admin: every user's rows. */
  async page(q: {
    userId: string | null;
    sessionId?: string;
    page: number;
    perPage: number;
  }): Promise<{ items: StoredAudit[]; total: number }> {
    const where = `($1::uuid IS NULL OR user_id = $1) AND ($2::uuid IS NULL OR session_id = $2)`;
    const args = [q.userId, q.sessionId ?? null];
    const [count] = await queryRows<{ n: string }>(
      this.ds,
      `SELECT count(*) AS n FROM approval_audit WHERE ${where}`,
      args,
    );
    const rows = await queryRows<ApprovalAuditRow>(
      this.ds,
      `SELECT * FROM approval_audit WHERE ${where} ORDER BY at DESC, ord DESC LIMIT $3 OFFSET $4`,
      [...args, q.perPage, (q.page - 1) * q.perPage],
    );
    return {
      total: Number(count?.n ?? 0),
      items: rows.map((r) => ({
        id: r.id,
        at: r.at,
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
