import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Queryable, queryRows } from '@skald/persistence';

export interface AuditEntry {
  userId: string;
  sessionId: string | null;
  toolCallId: string | null;
  requestId: string | null;
  toolName: string;
  argsDigest: string;
  decision: 'allow' | 'deny' | 'require' | 'approve' | 'reject' | 'answer';
  by: 'rule' | 'bypass' | 'run_context' | 'human' | 'auto_deny' | 'policy';
  actorUserId: string | null;
  ruleId: string | null;
  note: string | null;
  /** When the decision was taken (buffered entries are written later); default: the insert's time. */
  at?: Date;
}

export interface StoredAudit extends AuditEntry {
  id: string;
  at: Date;
}

const COLS = 13;

@Injectable()
export class AuditRepository {
  constructor(private readonly ds: DataSource) {}

  /** One multi-row INSERT for a batch. */
  async insert(entries: readonly AuditEntry[], db: Queryable = this.ds): Promise<void> {
    if (entries.length === 0) return;
    const params: unknown[] = [];
    const values = entries.map((e, i) => {
      params.push(
        randomUUID(),
        e.userId,
        e.sessionId,
        e.toolCallId,
        e.requestId,
        e.toolName,
        e.argsDigest,
        e.decision,
        e.by,
        e.actorUserId,
        e.ruleId,
        e.note,
        e.at ?? null,
      );
      const p = Array.from({ length: COLS }, (_, k) => `$${i * COLS + k + 1}`);
      return `(${p.slice(0, -1).join(', ')}, COALESCE(${p[COLS - 1]}::timestamptz, now()))`;
    });
    await queryRows(
      db,
      `INSERT INTO approval_audit (id, user_id, session_id, tool_call_id, request_id, tool_name, args_digest, decision, by, actor_user_id, rule_id, note, at)
       VALUES ${values.join(', ')}`,
      params,
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
    const rows = await queryRows<Record<string, unknown>>(
      this.ds,
      `SELECT * FROM approval_audit WHERE ${where} ORDER BY at DESC, ord DESC LIMIT $3 OFFSET $4`,
      [...args, q.perPage, (q.page - 1) * q.perPage],
    );
    return {
      total: Number(count?.n ?? 0),
      items: rows.map((r) => ({
        id: r.id as string,
        at: r.at as Date,
        userId: r.user_id as string,
        sessionId: r.session_id as string | null,
        toolCallId: r.tool_call_id as string | null,
        requestId: r.request_id as string | null,
        toolName: r.tool_name as string,
        argsDigest: r.args_digest as string,
        decision: r.decision as AuditEntry['decision'],
        by: r.by as AuditEntry['by'],
        actorUserId: r.actor_user_id as string | null,
        ruleId: r.rule_id as string | null,
        note: r.note as string | null,
      })),
    };
  }
}
