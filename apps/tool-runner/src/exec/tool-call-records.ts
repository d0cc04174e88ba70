import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { ReplyDataOf } from '@skald/contracts';
import { fromJsonText } from '@skald/persistence/pg-text';
import { queryRows } from '@skald/persistence/query-rows';
import type { ToolCallResultsRow } from '@skald/persistence';

export type ToolReply = ReplyDataOf<'tools.exec'>;

export interface CallIdentity {
  toolCallId: string;
  userId: string;
  sessionId: string;
  toolName: string;
}

/** What the record of a call says when a runner asks to start it. */
export type Claim =
  | { kind: 'claimed' }
  | { kind: 'finished'; userId: string; toolName: string; reply: ToolReply }
  /** Started by a runner whose heartbeat is fresh: it is (probably) still running the call. */
  | { kind: 'running'; userId: string; toolName: string; runner: string }
  /** Started by a runner whose heartbeat stopped: that runner died while running it. */
  | { kind: 'abandoned'; userId: string; toolName: string; runner: string };

/**
 * The durable record of the tool calls runners ran, keyed by tool call id (Postgres in production,
 * a map in unit tests). The start is recorded before the call runs, the reply when it ends, so a
 * duplicate — a resumed worker, a redelivered request, another replica — learns what happened.
 */
export abstract class ToolCallRecords {
  /** Records the start, unless the call has a record already (then says what it says). */
  abstract claim(call: CallIdentity, runner: string, staleAfterMs: number): Promise<Claim>;
  /** Takes over an abandoned call (compare-and-set on its runner); false if someone else did. */
  abstract takeOver(toolCallId: string, from: string, to: string): Promise<boolean>;
  abstract finish(toolCallId: string, runner: string, reply: ToolReply): Promise<void>;
  /** Forgets a call this runner claimed that did nothing (a stale preview), so it can run later. */
  abstract release(toolCallId: string, runner: string): Promise<void>;
  /** Refreshes the heartbeat of the calls this runner runs. */
  abstract heartbeat(runner: string, toolCallIds: string[]): Promise<void>;
  /** Deletes finished records older than `days`; returns how many. */
  abstract prune(days: number): Promise<number>;
}

/** A record as `claim` reads it: `reply` is the reply's JSON text; `stale`, whether its heartbeat stopped. */
type Row = Pick<ToolCallResultsRow, 'user_id' | 'tool_name' | 'status' | 'reply' | 'runner'> & { stale: boolean };
type Key = Pick<ToolCallResultsRow, 'tool_call_id'>;

@Injectable()
export class PgToolCallRecords extends ToolCallRecords {
  constructor(private readonly db: Database) {
    super();
  }

  async claim(call: CallIdentity, runner: string, staleAfterMs: number): Promise<Claim> {
    const inserted = await queryRows<Key>(
      this.db,
      `INSERT INTO tool_call_results (tool_call_id, user_id, session_id, tool_name, status, runner)
       VALUES ($1, $2, $3, $4, 'running', $5)
       ON CONFLICT (tool_call_id) DO NOTHING RETURNING tool_call_id`,
      [call.toolCallId, call.userId, call.sessionId, call.toolName, runner],
    );
    if (inserted.length === 1) return { kind: 'claimed' };
    const [row] = await queryRows<Row>(
      this.db,
      `SELECT user_id, tool_name, status, reply, runner,
              heartbeat_at < now() - make_interval(secs => $2::double precision / 1000) AS stale
         FROM tool_call_results WHERE tool_call_id = $1`,
      [call.toolCallId, staleAfterMs],
    );
    if (!row) return this.claim(call, runner, staleAfterMs); // pruned meanwhile
    const who = { userId: row.user_id, toolName: row.tool_name };
    if (row.status !== 'running' && row.reply)
      return { kind: 'finished', ...who, reply: fromJsonText<ToolReply>(row.reply) };
    return { kind: row.stale ? 'abandoned' : 'running', ...who, runner: row.runner };
  }

  async takeOver(toolCallId: string, from: string, to: string): Promise<boolean> {
    const rows = await queryRows<Key>(
      this.db,
      `UPDATE tool_call_results SET runner = $3, heartbeat_at = now(), started_at = now()
        WHERE tool_call_id = $1 AND runner = $2 AND status = 'running' RETURNING tool_call_id`,
      [toolCallId, from, to],
    );
    return rows.length === 1;
  }

  async finish(toolCallId: string, runner: string, reply: ToolReply): Promise<void> {
    await this.db.query(
      `UPDATE tool_call_results SET status = $3, reply = $4, finished_at = now()
        WHERE tool_call_id = $1 AND runner = $2 AND status = 'running'`,
      [toolCallId, runner, reply.status, JSON.stringify(reply)],
    );
  }

  async release(toolCallId: string, runner: string): Promise<void> {
    await this.db.query(
      `DELETE FROM tool_call_results WHERE tool_call_id = $1 AND runner = $2 AND status = 'running'`,
      [toolCallId, runner],
    );
  }

  async heartbeat(runner: string, toolCallIds: string[]): Promise<void> {
    if (toolCallIds.length === 0) return;
    await this.db.query(
      `UPDATE tool_call_results SET heartbeat_at = now()
        WHERE tool_call_id = ANY($1::uuid[]) AND runner = $2 AND status = 'running'`,
      [toolCallIds, runner],
    );
  }

  async prune(days: number): Promise<number> {
    const rows = await queryRows<Key>(
      this.db,
      `DELETE FROM tool_call_results WHERE finished_at < now() - make_interval(days => $1) RETURNING tool_call_id`,
      [days],
    );
    return rows.length;
  }
}

/** The same contract in memory (unit tests, and tools run without a database). */
export class InMemoryToolCallRecords extends ToolCallRecords {
  readonly rows = new Map<
    string,
    { call: CallIdentity; runner: string; heartbeat: number; reply: ToolReply | null; finishedAt: number | null }
  >();

  claim(call: CallIdentity, runner: string, staleAfterMs: number): Promise<Claim> {
    const row = this.rows.get(call.toolCallId);
    if (!row) {
      this.rows.set(call.toolCallId, { call, runner, heartbeat: Date.now(), reply: null, finishedAt: null });
      return Promise.resolve({ kind: 'claimed' });
    }
    const who = { userId: row.call.userId, toolName: row.call.toolName };
    if (row.reply) return Promise.resolve({ kind: 'finished', ...who, reply: row.reply });
    const stale = Date.now() - row.heartbeat > staleAfterMs;
    return Promise.resolve({ kind: stale ? 'abandoned' : 'running', ...who, runner: row.runner });
  }

  takeOver(toolCallId: string, from: string, to: string): Promise<boolean> {
    const row = this.rows.get(toolCallId);
    if (!row || row.reply || row.runner !== from) return Promise.resolve(false);
    row.runner = to;
    row.heartbeat = Date.now();
    return Promise.resolve(true);
  }

  finish(toolCallId: string, runner: string, reply: ToolReply): Promise<void> {
    const row = this.rows.get(toolCallId);
    if (row && row.runner === runner && !row.reply) {
      row.reply = reply;
      row.finishedAt = Date.now();
    }
    return Promise.resolve();
  }

  release(toolCallId: string, runner: string): Promise<void> {
    const row = this.rows.get(toolCallId);
    if (row && row.runner === runner && !row.reply) this.rows.delete(toolCallId);
    return Promise.resolve();
  }

  heartbeat(runner: string, toolCallIds: string[]): Promise<void> {
    for (const id of toolCallIds) {
      const row = this.rows.get(id);
      if (row && row.runner === runner && !row.reply) row.heartbeat = Date.now();
    }
    return Promise.resolve();
  }

  prune(days: number): Promise<number> {
    let n = 0;
    for (const [id, row] of this.rows) {
      if (row.finishedAt !== null && row.finishedAt < Date.now() - days * 86_400_000) {
        this.rows.delete(id);
        n++;
      }
    }
    return Promise.resolve(n);
  }
}
