import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { queryRows } from '@skald/persistence/query-rows';
import type { UserAgentsRow } from '@skald/persistence';
import { iso } from '../sessions/row-format';

/** A user's row for an agent: an override of a built-in one, or an agent of their own. */
export interface UserAgentRow {
  agentId: string;
  prompt: string | null;
  /** A partial meta (override) or a whole one (own agent), as stored. */
  meta: Record<string, unknown>;
  updatedAt: string;
}

type Row = { agent_id: string; prompt: string | null; meta: Record<string, unknown>; updated_at: unknown };
/** A `user_agents` row as read (also from the turn's start read, see loop-adapters/session-store/turn-start.ts). */
export const toUserAgentRow = (r: Row): UserAgentRow => ({
  agentId: r.agent_id,
  prompt: r.prompt,
  meta: r.meta ?? {},
  updatedAt: iso(r.updated_at),
});

/** `user_agents`: every method takes the user, so an unscoped query does not compile. */
@Injectable()
export class UserAgentsRepository {
  constructor(private readonly ds: Database) {}

  async find(scope: { userId: string; agentId: string }): Promise<UserAgentRow | null> {
    const rows = await queryRows<Row>(this.ds, `SELECT * FROM user_agents WHERE user_id = $1 AND agent_id = $2`, [
      scope.userId,
      scope.agentId,
    ]);
    return rows[0] ? toUserAgentRow(rows[0]) : null;
  }

  async list(scope: { userId: string }): Promise<UserAgentRow[]> {
    const rows = await queryRows<Row>(this.ds, `SELECT * FROM user_agents WHERE user_id = $1 ORDER BY agent_id`, [
      scope.userId,
    ]);
    return rows.map(toUserAgentRow);
  }

  async upsert(scope: { userId: string; agentId: string }, prompt: string | null, meta: Record<string, unknown>) {
    const rows = await queryRows<Row>(
      this.ds,
      `INSERT INTO user_agents (user_id, agent_id, prompt, meta) VALUES ($1, $2, $3, $4)
       ON CONFLICT (user_id, agent_id) DO UPDATE SET prompt = EXCLUDED.prompt, meta = EXCLUDED.meta, updated_at = now()
       RETURNING *`,
      [scope.userId, scope.agentId, prompt, JSON.stringify(meta)],
    );
    return toUserAgentRow(rows[0]);
  }

  async delete(scope: { userId: string; agentId: string }): Promise<boolean> {
    const rows = await queryRows<Pick<UserAgentsRow, 'agent_id'>>(
      this.ds,
      `DELETE FROM user_agents WHERE user_id = $1 AND agent_id = $2 RETURNING agent_id`,
      [scope.userId, scope.agentId],
    );
    return rows.length > 0;
  }
}
