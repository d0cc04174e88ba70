import { Injectable } from '@nestjs/common';
import { failureKey, nextFailureCount } from '@skald/agent-loop';
import { queryRows } from '@skald/persistence/query-rows';
import type { SessionsRow, ToolCallsRow } from '@skald/persistence';
import { Database } from '@skald/persistence/database';

export interface AwaitingCall {
  toolCallId: string;
  requestId: string | null;
  name: string;
}

/** The session row's turn bookkeeping that the driver reads and writes outside a turn's commits. */
@Injectable()
export class TurnStateRepository {
  constructor(private readonly ds: Database) {}

  /**
   * What the driver needs before each turn, in one read: a pending /stop, and the role of the
   * session's owner as of their latest message (the gate and the tool runner judge admin-only
   * actions, such as shared-memory writes, by it).
   */
  async turnControl(sessionId: string): Promise<{ stop: boolean; role: SessionsRow['owner_role'] }> {
    const rows = await queryRows<{ stop: boolean } & Pick<SessionsRow, 'owner_role'>>(
      this.ds,
      `SELECT stop_requested_at IS NOT NULL AS stop, owner_role FROM sessions WHERE id = $1`,
      [sessionId],
    );
    return { stop: rows[0]?.stop ?? false, role: rows[0]?.owner_role ?? 'user' };
  }

  /**
   * One more failed commit of the session's current step (the turn `turnId`, at the session's last
   * committed seq); returns how many failed in a row. The count lives on the session row, so it
   * survives restarts and is shared by every replica.
   */
  async recordCommitFailure(sessionId: string, turnId: string | null): Promise<number> {
    const rows = await queryRows<Pick<SessionsRow, 'last_seq' | 'commit_failures' | 'commit_failure_key'>>(
      this.ds,
      `SELECT last_seq, commit_failures, commit_failure_key FROM sessions WHERE id = $1`,
      [sessionId],
    );
    const r = rows[0];
    if (!r) return 0;
    const step = { turnId, lastSeq: Number(r.last_seq) };
    const count = nextFailureCount({ key: r.commit_failure_key, count: r.commit_failures }, step);
    await this.ds.query(`UPDATE sessions SET commit_failures = $2, commit_failure_key = $3 WHERE id = $1`, [
      sessionId,
      count,
      failureKey(step),
    ]);
    return count;
  }

  async clearCommitFailures(sessionId: string): Promise<void> {
    await this.ds.query(
      `UPDATE sessions SET commit_failures = 0, commit_failure_key = NULL WHERE id = $1 AND commit_failures <> 0`,
      [sessionId],
    );
  }

  async recordOwnerRole(sessionId: string, role: SessionsRow['owner_role']): Promise<void> {
    await this.ds.query(`UPDATE sessions SET owner_role = $2 WHERE id = $1 AND owner_role <> $2`, [sessionId, role]);
  }

  async turnState(sessionId: string): Promise<SessionsRow['turn_state'] | null> {
    const rows = await queryRows<Pick<SessionsRow, 'turn_state'>>(
      this.ds,
      `SELECT turn_state FROM sessions WHERE id = $1`,
      [sessionId],
    );
    return rows[0]?.turn_state ?? null;
  }

  async stopRequested(sessionId: string): Promise<boolean> {
    const rows = await queryRows<{ stop: boolean }>(
      this.ds,
      `SELECT stop_requested_at IS NOT NULL AS stop FROM sessions WHERE id = $1`,
      [sessionId],
    );
    return rows[0]?.stop ?? false;
  }

  /** Records a /stop for a session whose turn is not finished; false when there is nothing to stop. */
  async requestStop(sessionId: string): Promise<boolean> {
    const rows = await queryRows<Pick<SessionsRow, 'id'>>(
      this.ds,
      `UPDATE sessions SET stop_requested_at = now(), updated_at = now() WHERE id = $1 AND turn_state <> 'finished' RETURNING id`,
      [sessionId],
    );
    return rows.length > 0;
  }

  /** Clears a stop once the turn it was meant for has ended. */
  async clearStop(sessionId: string): Promise<void> {
    await this.ds.query(
      `UPDATE sessions SET stop_requested_at = NULL WHERE id = $1 AND stop_requested_at IS NOT NULL`,
      [sessionId],
    );
  }

  async awaitingCalls(sessionId: string): Promise<AwaitingCall[]> {
    const rows = await queryRows<Pick<ToolCallsRow, 'id' | 'request_id' | 'name'>>(
      this.ds,
      `SELECT id, request_id, name FROM tool_calls WHERE session_id = $1 AND status = 'awaiting_human' ORDER BY ord`,
      [sessionId],
    );
    return rows.map((r) => ({ toolCallId: r.id, requestId: r.request_id, name: r.name }));
  }
}
