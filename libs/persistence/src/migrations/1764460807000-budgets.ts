import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Budgets (the session worker's): limits on a user's LLM tokens and cost per UTC day and month.
 * - `groups.budget_*`: a group's limits for each member (null: no limit on that dimension). Only
 *   groups with at least one limit take part in a member's budget.
 * - `llm_user_budgets`: an admin's limits for one user, replacing their groups' limits (a null
 *   column: no limit on it). No row: the groups decide.
 * - `llm_budget_users`: one row per limited user, locked by each admission (the order of every
 *   replica's admissions of that user), with the largest call seen (the size a call in flight is
 *   assumed to have).
 * - `llm_budget_holds`: model calls admitted and not yet in the ledger. A hold without tokens is a
 *   call in flight; a settled hold has the call's tokens and cost and its message, and counts until
 *   that message (whose commit writes the ledger row with it) exists. Every hold expires.
 */
export class Budgets1764460807000 implements MigrationInterface {
  name = 'Budgets1764460807000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE groups
        ADD COLUMN budget_tokens_day bigint CHECK (budget_tokens_day >= 0),
        ADD COLUMN budget_tokens_month bigint CHECK (budget_tokens_month >= 0),
        ADD COLUMN budget_cost_day_usd numeric(20, 6) CHECK (budget_cost_day_usd >= 0),
        ADD COLUMN budget_cost_month_usd numeric(20, 6) CHECK (budget_cost_month_usd >= 0)`);
    await q.query(`
      CREATE TABLE llm_user_budgets (
        user_id uuid PRIMARY KEY,
        tokens_day bigint CHECK (tokens_day >= 0),
        tokens_month bigint CHECK (tokens_month >= 0),
        cost_day_usd numeric(20, 6) CHECK (cost_day_usd >= 0),
        cost_month_usd numeric(20, 6) CHECK (cost_month_usd >= 0),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE llm_budget_users (
        user_id uuid PRIMARY KEY,
        largest_call_tokens bigint NOT NULL DEFAULT 0,
        largest_call_cost_usd numeric(20, 6) NOT NULL DEFAULT 0
      )`);
    await q.query(`
      CREATE TABLE llm_budget_holds (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL,
        message_id uuid,
        tokens bigint,
        cost_usd numeric(20, 6),
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX llm_budget_holds_user_idx ON llm_budget_holds (user_id, expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE llm_budget_holds`);
    await q.query(`DROP TABLE llm_budget_users`);
    await q.query(`DROP TABLE llm_user_budgets`);
    await q.query(`
      ALTER TABLE groups DROP COLUMN budget_tokens_day, DROP COLUMN budget_tokens_month,
        DROP COLUMN budget_cost_day_usd, DROP COLUMN budget_cost_month_usd`);
  }
}
