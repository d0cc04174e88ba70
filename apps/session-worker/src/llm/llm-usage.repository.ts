import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { queryRows } from '@skald/persistence';

type Row = Record<string, unknown>;

export interface UsageRecord {
  userId: string;
  sessionId: string;
  frameId: string | null;
  messageId: string | null;
  /** `title`: the conversation's title, written after its first exchange. */
  purpose: 'round' | 'compaction' | 'title';
  client: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  estimated: boolean;
  costUsd: number | null;
}

export interface ClientTotals {
  client: string;
  model: string;
  calls: number;
  inputTokens: number;
  outputTokens: number;
  /** null when a call of this client had no price. */
  costUsd: number | null;
  estimated: boolean;
}

/** Today's tokens of a user (UTC day, by the database clock) and when the day ends. */
export interface DailyUsage {
  usedTokens: number;
  resetsAt: Date;
}

/** The LLM ledger (`llm_usage`) and the users' pins (`llm_client_pins`). Every method takes the user. */
@Injectable()
export class LlmUsageRepository {
  constructor(private readonly ds: DataSource) {}

  async record(r: UsageRecord): Promise<void> {
    await this.ds.query(
      `INSERT INTO llm_usage (user_id, session_id, frame_id, message_id, purpose, client, model,
                              input_tokens, output_tokens, cached_input_tokens, estimated, cost_usd)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
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
      ],
    );
  }

  async today(scope: { userId: string }): Promise<DailyUsage> {
    const rows: Row[] = await queryRows(
      this.ds,
      `WITH day AS (SELECT date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS start)
       SELECT COALESCE((SELECT SUM(input_tokens + output_tokens) FROM llm_usage, day
                          WHERE user_id = $1 AND created_at >= day.start), 0)::bigint AS used,
              (SELECT start + interval '1 day' FROM day) AS resets_at`,
      [scope.userId],
    );
    return { usedTokens: Number(rows[0].used), resetsAt: new Date(rows[0].resets_at as string | Date) };
  }

  /** Per client (and model), in order of first use: the calls of one session of the user. */
  async sessionTotals(scope: { userId: string; sessionId: string }): Promise<ClientTotals[]> {
    const rows: Row[] = await queryRows(
      this.ds,
      `SELECT client, model, count(*)::int AS calls,
              SUM(input_tokens)::bigint AS input_tokens, SUM(output_tokens)::bigint AS output_tokens,
              CASE WHEN bool_and(cost_usd IS NOT NULL) THEN SUM(cost_usd) END AS cost_usd,
              bool_or(estimated) AS estimated
         FROM llm_usage
        WHERE user_id = $1 AND session_id = $2
        GROUP BY client, model
        ORDER BY min(id)`,
      [scope.userId, scope.sessionId],
    );
    return rows.map((r) => ({
      client: String(r.client),
      model: String(r.model),
      calls: Number(r.calls),
      inputTokens: Number(r.input_tokens),
      outputTokens: Number(r.output_tokens),
      costUsd: r.cost_usd === null || r.cost_usd === undefined ? null : Number(r.cost_usd),
      estimated: Boolean(r.estimated),
    }));
  }

  async pin(scope: { userId: string; source: string }): Promise<string | null> {
    const rows: Row[] = await queryRows(
      this.ds,
      `SELECT client FROM llm_client_pins WHERE user_id = $1 AND source = $2`,
      [scope.userId, scope.source],
    );
    return rows[0] ? String(rows[0].client) : null;
  }

  async setPin(scope: { userId: string; source: string }, client: string | null): Promise<void> {
    if (client === null) {
      await this.ds.query(`DELETE FROM llm_client_pins WHERE user_id = $1 AND source = $2`, [
        scope.userId,
        scope.source,
      ]);
      return;
    }
    await this.ds.query(
      `INSERT INTO llm_client_pins (user_id, source, client) VALUES ($1, $2, $3)
       ON CONFLICT (user_id, source) DO UPDATE SET client = EXCLUDED.client, updated_at = now()`,
      [scope.userId, scope.source, client],
    );
  }
}
