import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { queryRows } from '@skald/persistence/query-rows';
import type { LlmClientPinsRow, LlmUsageRow } from '@skald/persistence';
import type { UsageRow } from '../loop-adapters/session-store/one-statement-commit';
import { insertUsage } from '../loop-adapters/session-store/mutation-sql';
import type { PendingUsage } from '../loop-adapters/session-store/store-commit';

/** One answered model call. `title`: the conversation's title, written after its first exchange. */
export type UsageRecord = UsageRow;

/**
 * How long the row of an answered round call waits for the commit of its message (which writes it
 * in the same statement) before it is written on its own — the turn died, was cancelled or lost its
 * lease after the answer: the call was still paid for.
 */
export const USAGE_WAIT_MS = 5_000;
/** At most this many messages wait; beyond, a row is written at once (the bound of the map). */
export const USAGE_WAITING_MAX = 10_000;

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

/**
 * The LLM ledger (`llm_usage`) and the users' pins (`llm_client_pins`). Every method takes the user.
 *
 * The row of an answered round call (`purpose: 'round'`) is not inserted on its own: it waits
 * (`PendingUsage`) for the session store's commit of the call's message, which writes it in the
 * same statement — one statement less per round, and the ledger holds a round's call exactly when
 * its answer is in the conversation. A row whose message is not committed within `USAGE_WAIT_MS`
 * (or whose commit failed, or at shutdown) is written alone, unless its message exists by then (an
 * ambiguous commit that did write): counted once either way. What is lost: the row of a call
 * answered in the milliseconds before the worker process died, before its message was committed —
 * an answer nobody used (recovery asks the model again, and that call is counted).
 */
@Injectable()
export class LlmUsageRepository implements PendingUsage, BeforeApplicationShutdown {
  private readonly waiting = new Map<string, { rows: UsageRecord[]; timer: NodeJS.Timeout }>();
  private closed = false;

  constructor(private readonly ds: Database) {}

  async record(r: UsageRecord): Promise<void> {
    if (r.purpose === 'round' && r.messageId !== null && !this.closed) {
      const entry = this.waiting.get(r.messageId);
      if (entry) {
        entry.rows.push(r);
        return;
      }
      if (this.waiting.size < USAGE_WAITING_MAX) {
        this.wait(r.messageId, [r]);
        return;
      }
    }
    await this.insert(r, false);
  }

  /** The waiting rows of these messages, for their commit. */
  take(messageIds: readonly string[]): UsageRecord[] {
    const out: UsageRecord[] = [];
    for (const id of messageIds) {
      const entry = this.waiting.get(id);
      if (!entry) continue;
      clearTimeout(entry.timer);
      this.waiting.delete(id);
      out.push(...entry.rows);
    }
    return out;
  }

  /** Rows whose commit failed: they wait again (and are written alone unless their message exists). */
  giveBack(rows: readonly UsageRecord[]): void {
    for (const r of rows) {
      const id = r.messageId as string;
      const entry = this.waiting.get(id);
      if (entry) entry.rows.push(r);
      else this.wait(id, [r]);
    }
  }

  /** Shutdown: every waiting row is written now (the database is still open). */
  async beforeApplicationShutdown(): Promise<void> {
    this.closed = true;
    await this.flushWaiting();
  }

  /** Writes every waiting row now, in the order they were answered (each unless its message exists). */
  async flushWaiting(): Promise<void> {
    for (const id of [...this.waiting.keys()]) await this.flush(id);
  }

  private wait(messageId: string, rows: UsageRecord[]): void {
    const timer = setTimeout(() => void this.flush(messageId), USAGE_WAIT_MS);
    timer.unref();
    this.waiting.set(messageId, { rows, timer });
  }

  private async flush(messageId: string): Promise<void> {
    for (const r of this.take([messageId])) {
      await this.insert(r, true).catch(() => {
        // The database did not answer: the row waits for another try (bounded by the map's size).
        if (!this.closed) this.giveBack([r]);
      });
    }
  }

  /** `unlessCommitted`: not when the row's message exists (its commit wrote the row with it). */
  private insert(r: UsageRecord, unlessCommitted: boolean): Promise<void> {
    return insertUsage(this.ds, r, unlessCommitted);
  }

  /** One model call that got no answer (a row of `llm_call_failures`). */
  async recordFailure(r: {
    userId: string;
    sessionId: string | null;
    purpose: string;
    client: string;
    model: string;
    errorKind: string;
  }): Promise<void> {
    await this.ds.query(
      `INSERT INTO llm_call_failures (user_id, session_id, purpose, client, model, error_kind)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [r.userId, r.sessionId, r.purpose, r.client, r.model, r.errorKind],
    );
  }

  async today(scope: { userId: string }): Promise<DailyUsage> {
    const rows = await queryRows<{ used: string; resets_at: Date }>(
      this.ds,
      `WITH day AS (SELECT date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS start)
       SELECT COALESCE((SELECT SUM(input_tokens + output_tokens) FROM llm_usage, day
                          WHERE user_id = $1 AND created_at >= day.start), 0)::bigint AS used,
              (SELECT start + interval '1 day' FROM day) AS resets_at`,
      [scope.userId],
    );
    return { usedTokens: Number(rows[0].used), resetsAt: new Date(rows[0].resets_at) };
  }

  /** Per client (and model), in order of first use: the calls of one session of the user. */
  async sessionTotals(scope: { userId: string; sessionId: string }): Promise<ClientTotals[]> {
    const rows = await queryRows<
      // Sums of bigint and numeric columns come back as text.
      Pick<LlmUsageRow, 'client' | 'model' | 'estimated'> & {
        calls: number;
        input_tokens: string;
        output_tokens: string;
        cost_usd: string | null;
      }
    >(
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
    const rows = await queryRows<Pick<LlmClientPinsRow, 'client'>>(
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
