import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The session worker's usage report:
 * - `llm_usage_daily`: the ledger summed per UTC day, user, client and model, kept by a statement
 *   trigger on `llm_usage` (one upsert per day, user, client and model a statement inserted, as the
 *   role that inserted): a report over a year reads at most one row per (day, user, client, model)
 *   instead of every call. `priced_calls` counts the calls with a cost, so a sum is known to be
 *   whole (`priced_calls = calls`) or not.
 * - `llm_call_failures`: one row per model call that got no answer (the provider failed, timed out,
 *   refused), with the kind of failure; a call the caller aborted is not one. Appended, never changed.
 */
export class UsageReport1764460806900 implements MigrationInterface {
  name = 'UsageReport1764460806900';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE llm_usage_daily (
        day date NOT NULL,
        user_id uuid NOT NULL,
        client text NOT NULL,
        model text NOT NULL,
        calls bigint NOT NULL,
        input_tokens bigint NOT NULL,
        output_tokens bigint NOT NULL,
        priced_calls bigint NOT NULL,
        cost_usd numeric(20, 6) NOT NULL,
        PRIMARY KEY (day, user_id, client, model)
      )`);
    await q.query(`CREATE INDEX llm_usage_daily_user_idx ON llm_usage_daily (user_id, day)`);
    await q.query(`
      CREATE FUNCTION llm_usage_daily_add() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO llm_usage_daily AS d
               (day, user_id, client, model, calls, input_tokens, output_tokens, priced_calls, cost_usd)
        SELECT (created_at AT TIME ZONE 'UTC')::date, user_id, client, model, count(*),
               SUM(input_tokens), SUM(output_tokens), count(cost_usd), COALESCE(SUM(cost_usd), 0)
          FROM added
         GROUP BY 1, 2, 3, 4
         ORDER BY 1, 2, 3, 4
        ON CONFLICT (day, user_id, client, model) DO UPDATE SET
          calls = d.calls + EXCLUDED.calls,
          input_tokens = d.input_tokens + EXCLUDED.input_tokens,
          output_tokens = d.output_tokens + EXCLUDED.output_tokens,
          priced_calls = d.priced_calls + EXCLUDED.priced_calls,
          cost_usd = d.cost_usd + EXCLUDED.cost_usd;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER llm_usage_daily_add AFTER INSERT ON llm_usage
        REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION llm_usage_daily_add()`);
    await q.query(`
      INSERT INTO llm_usage_daily (day, user_id, client, model, calls, input_tokens, output_tokens, priced_calls, cost_usd)
      SELECT (created_at AT TIME ZONE 'UTC')::date, user_id, client, model, count(*),
             SUM(input_tokens), SUM(output_tokens), count(cost_usd), COALESCE(SUM(cost_usd), 0)
        FROM llm_usage
       GROUP BY 1, 2, 3, 4`);
    await q.query(`
      CREATE TABLE llm_call_failures (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        user_id uuid NOT NULL,
        session_id uuid,
        purpose text NOT NULL,
        client text NOT NULL,
        model text NOT NULL,
        error_kind text NOT NULL CHECK (error_kind IN ('timeout', 'network', 'rate_limited', 'server',
          'invalid_response', 'auth', 'not_found', 'bad_request', 'other')),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX llm_call_failures_day_idx ON llm_call_failures (created_at)`);
    await q.query(`CREATE INDEX llm_call_failures_user_idx ON llm_call_failures (user_id, created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE llm_call_failures`);
    await q.query(`DROP TRIGGER llm_usage_daily_add ON llm_usage`);
    await q.query(`DROP FUNCTION llm_usage_daily_add()`);
    await q.query(`DROP TABLE llm_usage_daily`);
  }
}
