import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { queryRows } from '@skald/persistence/query-rows';
import type { LlmCallFailuresRow, LlmUsageDailyRow } from '@skald/persistence';

/**
 * Whose usage a query reads: one user, or every user (`null`, an admin's overview). Every method
 * takes it, so a query cannot forget the tenant.
 */
export interface UsageScope {
  userId: string | null;
  /** `[from, until)`, UTC days `YYYY-MM-DD`. */
  from: string;
  until: string;
}

/** Sums as the database gives them: bigint and numeric sums arrive as text. */
export interface UsageSumsRow {
  calls: string;
  input_tokens: string;
  output_tokens: string;
  priced_calls: string;
  cost_usd: string;
}

const SUMS = `SUM(calls)::bigint AS calls, SUM(input_tokens)::bigint AS input_tokens,
  SUM(output_tokens)::bigint AS output_tokens, SUM(priced_calls)::bigint AS priced_calls,
  SUM(cost_usd) AS cost_usd`;

type FailureRow = Pick<LlmCallFailuresRow, 'client' | 'model' | 'error_kind'> & { day: string; calls: number };

/** `$1` from, `$2` until, `$3` the user or null for every user. */
const RANGE = `day >= $1::date AND day < $2::date AND ($3::uuid IS NULL OR user_id = $3::uuid)`;
const FAILURE_RANGE = `created_at >= ($1::date AT TIME ZONE 'UTC') AND created_at < ($2::date AT TIME ZONE 'UTC')
  AND ($3::uuid IS NULL OR user_id = $3::uuid)`;

/**
 * Reads of the usage ledger for reports: the daily rollup (`llm_usage_daily`, one row per day,
 * user, client and model, kept by a trigger on `llm_usage`) and the failed calls
 * (`llm_call_failures`). Read only.
 */
@Injectable()
export class UsageReportRepository {
  constructor(private readonly ds: Database) {}

  byDay(s: UsageScope): Promise<Array<UsageSumsRow & { day: string }>> {
    return queryRows<UsageSumsRow & { day: string }>(
      this.ds,
      `SELECT to_char(day, 'YYYY-MM-DD') AS day, ${SUMS}
         FROM llm_usage_daily WHERE ${RANGE} GROUP BY day ORDER BY day`,
      [s.from, s.until, s.userId],
    );
  }

  byModel(s: UsageScope): Promise<Array<UsageSumsRow & Pick<LlmUsageDailyRow, 'client' | 'model'>>> {
    return queryRows<UsageSumsRow & Pick<LlmUsageDailyRow, 'client' | 'model'>>(
      this.ds,
      `SELECT client, model, ${SUMS}
         FROM llm_usage_daily WHERE ${RANGE}
        GROUP BY client, model ORDER BY SUM(input_tokens + output_tokens) DESC, client, model`,
      [s.from, s.until, s.userId],
    );
  }

  /** The `limit` users with the most tokens in the range (ties by id). */
  topUsers(s: UsageScope, limit: number): Promise<Array<UsageSumsRow & Pick<LlmUsageDailyRow, 'user_id'>>> {
    return queryRows<UsageSumsRow & Pick<LlmUsageDailyRow, 'user_id'>>(
      this.ds,
      `SELECT user_id, ${SUMS}
         FROM llm_usage_daily WHERE ${RANGE}
        GROUP BY user_id ORDER BY SUM(input_tokens + output_tokens) DESC, user_id LIMIT $4`,
      [s.from, s.until, s.userId, limit],
    );
  }

  /**
   * Per group by current membership (a user in several groups counts in each; `group_id` null: the
   * users in no group), most tokens first. The range's rows are summed per user first, then joined
   * once to `group_members` (a user an admin and the identity provider both put in a group counts once).
   */
  byGroup(
    s: UsageScope,
  ): Promise<Array<UsageSumsRow & { group_id: string | null; name: string | null; users: number }>> {
    return queryRows<UsageSumsRow & { group_id: string | null; name: string | null; users: number }>(
      this.ds,
      `WITH u AS (SELECT user_id, ${SUMS} FROM llm_usage_daily WHERE ${RANGE} GROUP BY user_id),
            m AS (SELECT DISTINCT group_id, user_id FROM group_members)
       SELECT * FROM (
         SELECT g.id AS group_id, g.name, count(*)::int AS users, ${SUMS}
           FROM u JOIN m ON m.user_id = u.user_id JOIN groups g ON g.id = m.group_id
          GROUP BY g.id, g.name
         UNION ALL
         SELECT NULL, NULL, count(*)::int, ${SUMS}
           FROM u WHERE NOT EXISTS (SELECT 1 FROM group_members x WHERE x.user_id = u.user_id)
         HAVING count(*) > 0) t
        ORDER BY input_tokens + output_tokens DESC, name NULLS LAST, group_id`,
      [s.from, s.until, s.userId],
    );
  }

  failures(s: UsageScope): Promise<FailureRow[]> {
    return queryRows<FailureRow>(
      this.ds,
      `SELECT to_char((created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day, client, model, error_kind,
              count(*)::int AS calls
         FROM llm_call_failures WHERE ${FAILURE_RANGE}
        GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
      [s.from, s.until, s.userId],
    );
  }
}
