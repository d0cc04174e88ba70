import { Injectable } from '@nestjs/common';
import { queryRows } from '@skald/persistence';
import { DataSource } from 'typeorm';

export interface AwaitingCall {
  toolCallId: string;
  requestId: string | null;
  name: string;
}

/** The session row's turn bookkeeping that the driver reads and writes outside a turn's commits. */
@Injectable()
export class TurnStateRepository {
  constructor(private readonly ds: DataSource) {}

  /**
   * What the driver needs before each turn, in one read: a pending /stop, and the role of the
   * session's owner as of their latest message (the gate and the tool runner judge admin-only
   * actions, such as shared-memory writes, by it).
   */
  async turnControl(sessionId: string): Promise<{ stop: boolean; role: 'user' | 'admin' }> {
    const rows = await queryRows<{ stop: boolean; owner_role: 'user' | 'admin' }>(
      this.ds,
      `SELECT stop_requested_at IS NOT NULL AS stop, owner_role FROM sessions WHERE id = $1`,
      [sessionId],
    );
    return { stop: rows[0]?.stop ?? false, role: rows[0]?.owner_role ?? 'user' };
  }

  async recordOwnerRole(sessionId: string, role: 'user' | 'admin'): Promise<void> {
    await this.ds.query(`UPDATE sessions SET owner_role = $2 WHERE id = $1 AND owner_role <> $2`, [sessionId, role]);
  }

  async turnState(sessionId: string): Promise<'running' | 'parked' | 'finished' | null> {
    const rows = await queryRows<{ turn_state: 'running' | 'parked' | 'finished' }>(
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
    const rows = await queryRows(
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
    const rows = await queryRows<{ id: string; request_id: string | null; name: string }>(
      this.ds,
      `SELECT id, request_id, name FROM tool_calls WHERE session_id = $1 AND status = 'awaiting_human' ORDER BY ord`,
      [sessionId],
    );
    return rows.map((r) => ({ toolCallId: r.id, requestId: r.request_id, name: r.name }));
  }
}
