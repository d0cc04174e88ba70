import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Database } from '@skald/persistence/database';
import { ApprovalChannel, HumanRequestStatus, SessionApprovalScope } from '@skald/contracts';
import { fromJsonText, fromPgText, toJsonText, toPgText } from '@skald/persistence/pg-text';
import { Queryable, queryRows } from '@skald/persistence/query-rows';
import type { ApprovalRequestsRow } from '@skald/persistence';

export interface StoredRequest {
  id: string;
  kind: ApprovalRequestsRow['kind'];
  toolCallId: string;
  sessionId: string;
  userId: string;
  source: string;
  toolName: string;
  arguments: string;
  preview: Record<string, unknown> | null;
  question: { title: string; question: string; suggested_answers: string[] } | null;
  /** Where the call lands when that is not the path it names (null: where it says, or unknown). */
  landsAt: string | null;
  status: HumanRequestStatus;
  note: string | null;
  answer: string | null;
  actorUserId: string | null;
  /** Where a human answered (null: not answered by one, or answered before the column). */
  channel: ApprovalChannel | null;
  /** The session approval the answer opened, as asked (null: a plain answer). */
  bypass: RequestBypass | null;
  cancelReason: string | null;
  /** The turn that asked; null on rows written before the column. */
  turnId: string | null;
  /** What the gate judged the call with; null on rows written before the column (not editable). */
  gateContext: StoredGateContext | null;
  /** Approved with edited arguments (JSON text) and the diff of each changed argument; else null. */
  editedArguments: string | null;
  editDiff: string | null;
  createdAt: Date;
  resolvedAt: Date | null;
}

export interface NewRequest {
  id: string;
  kind: ApprovalRequestsRow['kind'];
  toolCallId: string;
  sessionId: string;
  userId: string;
  source: string;
  toolName: string;
  arguments: string;
  preview: unknown;
  question: unknown;
  turnId: string | null;
  landsAt: string | null;
  gateContext: StoredGateContext | null;
}

/** `approval.register` `gate_context`, as stored. */
export interface StoredGateContext {
  agent_id: string;
  /** The session's owner is an admin (the register's actor role). */
  is_admin?: boolean;
  security_group?: string;
  security_groups?: string[];
  run_context?: {
    working_directory?: string | null;
    allow_fs_reads?: string[];
    allow_fs_writes?: string[];
  };
}

/** A human's approval with edited arguments. */
export interface RequestEdit {
  arguments: string;
  diff: string;
}

/** A session approval as an approver asked for it: the scope (`call`: the call's narrow scopes) and its seconds. */
export interface RequestBypass {
  scope: SessionApprovalScope;
  secs?: number;
}

/** `userId: null` = an admin acting on any user's requests. */
export interface Owner {
  userId: string | null;
}

/** The columns a request is read with (all but `ord`, its order of arrival). */
const REQUEST_COLUMNS = [
  'id',
  'kind',
  'tool_call_id',
  'session_id',
  'user_id',
  'source',
  'tool_name',
  'arguments',
  'preview',
  'question',
  'status',
  'note',
  'answer',
  'actor_user_id',
  'channel',
  'bypass',
  'cancel_reason',
  'turn_id',
  'lands_at',
  'gate_context',
  'edited_arguments',
  'edit_diff',
  'created_at',
  'resolved_at',
] as const satisfies readonly (keyof ApprovalRequestsRow)[];
type RequestRow = Pick<ApprovalRequestsRow, (typeof REQUEST_COLUMNS)[number]>;
const COLUMNS = REQUEST_COLUMNS.join(', ');

@Injectable()
export class RequestsRepository {
  constructor(private readonly ds: Database) {}

  /** Inserts unless the id exists; returns the row and whether it was new. */
  async insertOrGet(r: NewRequest): Promise<{ row: StoredRequest; created: boolean } | null> {
    const inserted = await queryRows<RequestRow>(
      this.ds,
      `INSERT INTO approval_requests (id, kind, tool_call_id, session_id, user_id, source, tool_name, arguments, preview, question, turn_id,
                                      lands_at, gate_context)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
       ON CONFLICT (id) DO NOTHING RETURNING ${COLUMNS}`,
      [
        r.id,
        r.kind,
        r.toolCallId,
        r.sessionId,
        r.userId,
        r.source,
        toPgText(r.toolName),
        toPgText(r.arguments),
        r.preview === undefined ? null : toJsonText(r.preview),
        r.question === undefined ? null : toJsonText(r.question),
        r.turnId,
        toPgText(r.landsAt),
        r.gateContext === null ? null : toJsonText(r.gateContext),
      ],
    );
    if (inserted[0]) return { row: toRequest(inserted[0]), created: true };
    const existing = await this.findById({ userId: r.userId }, r.id);
    return existing ? { row: existing, created: false } : null;
  }

  async findById(owner: Owner, id: string): Promise<StoredRequest | null> {
    const rows = await queryRows<RequestRow>(
      this.ds,
      `SELECT ${COLUMNS} FROM approval_requests WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2)`,
      [id, owner.userId],
    );
    return rows[0] ? toRequest(rows[0]) : null;
  }

  /** The request of a tool call: its pending one if any, else the latest. */
  async findByToolCall(owner: Owner, toolCallId: string): Promise<StoredRequest | null> {
    const rows = await queryRows<RequestRow>(
      this.ds,
      `SELECT ${COLUMNS} FROM approval_requests WHERE tool_call_id = $1 AND ($2::uuid IS NULL OR user_id = $2)
       ORDER BY (status = 'pending') DESC, ord DESC LIMIT 1`,
      [toolCallId, owner.userId],
    );
    return rows[0] ? toRequest(rows[0]) : null;
  }

  /** First answer wins: only a pending row changes, under its row lock. Null when it was not pending. */
  async resolvePending(
    db: Queryable,
    r: {
      id: string;
      status: HumanRequestStatus;
      note: string | null;
      answer: string | null;
      actorUserId: string;
      edit: RequestEdit | null;
      channel: ApprovalChannel | null;
      bypass: RequestBypass | null;
    },
  ): Promise<StoredRequest | null> {
    const rows = await queryRows<RequestRow>(
      db,
      `UPDATE approval_requests SET status = $2, note = $3, answer = $4, actor_user_id = $5, resolved_at = now(),
                                    edited_arguments = $6, edit_diff = $7, channel = $8, bypass = $9::jsonb
       WHERE id = $1 AND status = 'pending' RETURNING ${COLUMNS}`,
      [
        r.id,
        r.status,
        toPgText(r.note),
        toPgText(r.answer),
        r.actorUserId,
        toPgText(r.edit?.arguments ?? null),
        toPgText(r.edit?.diff ?? null),
        r.channel,
        r.bypass === null ? null : JSON.stringify(r.bypass),
      ],
    );
    return rows[0] ? toRequest(rows[0]) : null;
  }

  async cancelSession(owner: Owner, sessionId: string, reason: string, actorUserId: string): Promise<StoredRequest[]> {
    const rows = await queryRows<RequestRow>(
      this.ds,
      `UPDATE approval_requests SET status = 'cancelled', cancel_reason = $3, actor_user_id = $4, resolved_at = now()
       WHERE session_id = $1 AND status = 'pending' AND ($2::uuid IS NULL OR user_id = $2) RETURNING ${COLUMNS}`,
      [sessionId, owner.userId, reason, actorUserId],
    );
    return rows.map(toRequest);
  }

  /** The answered approvals of these calls of the owner's session, oldest first. */
  async answeredOfCalls(owner: Owner, sessionId: string, toolCallIds: readonly string[]): Promise<StoredRequest[]> {
    if (toolCallIds.length === 0) return [];
    const rows = await queryRows<RequestRow>(
      this.ds,
      `SELECT ${COLUMNS} FROM approval_requests
       WHERE session_id = $1 AND ($2::uuid IS NULL OR user_id = $2) AND tool_call_id = ANY($3::uuid[])
         AND kind = 'approval' AND status IN ('approved', 'rejected', 'cancelled')
       ORDER BY ord`,
      [sessionId, owner.userId, toolCallIds],
    );
    return rows.map(toRequest);
  }

  async pendingOfUser(userId: string): Promise<StoredRequest[]> {
    const rows = await queryRows<RequestRow>(
      this.ds,
      `SELECT ${COLUMNS} FROM approval_requests WHERE user_id = $1 AND status = 'pending' ORDER BY ord LIMIT 1000`,
      [userId],
    );
    return rows.map(toRequest);
  }

  transaction<T>(work: (db: EntityManager) => Promise<T>): Promise<T> {
    return this.ds.transaction(work);
  }
}

function toRequest(r: RequestRow): StoredRequest {
  return {
    id: r.id,
    kind: r.kind,
    toolCallId: r.tool_call_id,
    sessionId: r.session_id,
    userId: r.user_id,
    source: r.source,
    toolName: fromPgText(r.tool_name),
    arguments: fromPgText(r.arguments),
    preview: r.preview === null ? null : fromJsonText<StoredRequest['preview']>(r.preview),
    question: r.question === null ? null : fromJsonText<StoredRequest['question']>(r.question),
    status: r.status,
    note: fromPgText(r.note),
    answer: fromPgText(r.answer),
    actorUserId: r.actor_user_id,
    channel: r.channel,
    bypass: r.bypass === null ? null : (r.bypass as RequestBypass),
    cancelReason: r.cancel_reason,
    turnId: r.turn_id,
    landsAt: fromPgText(r.lands_at),
    gateContext: r.gate_context === null ? null : fromJsonText<StoredGateContext>(r.gate_context),
    editedArguments: fromPgText(r.edited_arguments),
    editDiff: fromPgText(r.edit_diff),
    createdAt: r.created_at,
    resolvedAt: r.resolved_at,
  };
}
