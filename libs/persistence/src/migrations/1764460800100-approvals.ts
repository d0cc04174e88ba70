import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Approval service: session bypasses with expiry (shared by every replica: the row is the
 * truth), the audit log of every decision, the known-tools catalog, and the columns pending
 * requests need for cancellation and fast lookups.
 */
export class Approvals1764460800100 implements MigrationInterface {
  name = 'Approvals1764460800100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE approval_bypasses (
        id uuid PRIMARY KEY,
        session_id uuid NOT NULL,
        user_id uuid NOT NULL,
        scope jsonb NOT NULL,
        expires_at timestamptz,
        created_by uuid NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    await q.query(
      `CREATE INDEX approval_bypasses_session_active_idx ON approval_bypasses (session_id) WHERE revoked_at IS NULL`,
    );
    await q.query(`CREATE INDEX approval_bypasses_user_idx ON approval_bypasses (user_id, created_at DESC)`);
    await q.query(`
      CREATE TABLE approval_audit (
        id uuid PRIMARY KEY,
        ord bigint GENERATED ALWAYS AS IDENTITY,
        at timestamptz NOT NULL DEFAULT now(),
        user_id uuid NOT NULL,
        session_id uuid,
        tool_call_id uuid,
        request_id uuid,
        tool_name text NOT NULL,
        args_digest text NOT NULL,
        decision text NOT NULL CHECK (decision IN ('allow', 'deny', 'require', 'approve', 'reject', 'answer')),
        by text NOT NULL CHECK (by IN ('rule', 'bypass', 'run_context', 'human', 'auto_deny', 'policy')),
        actor_user_id uuid,
        rule_id uuid,
        note text
      )`);
    await q.query(`CREATE INDEX approval_audit_user_idx ON approval_audit (user_id, ord DESC)`);
    await q.query(`CREATE INDEX approval_audit_session_idx ON approval_audit (session_id, ord DESC)`);
    await q.query(`
      CREATE TABLE known_tools (
        name text PRIMARY KEY,
        category text NOT NULL DEFAULT 'dynamic',
        first_seen_at timestamptz NOT NULL DEFAULT now(),
        last_seen_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`ALTER TABLE approval_requests ADD COLUMN cancel_reason text`);
    await q.query(`ALTER TABLE approval_requests ADD COLUMN ord bigint GENERATED ALWAYS AS IDENTITY`);
    await q.query(
      `CREATE INDEX approval_requests_session_pending_idx ON approval_requests (session_id) WHERE status = 'pending'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS approval_requests_session_pending_idx`);
    await q.query(`ALTER TABLE approval_requests DROP COLUMN IF EXISTS ord`);
    await q.query(`ALTER TABLE approval_requests DROP COLUMN IF EXISTS cancel_reason`);
    await q.query(`DROP TABLE IF EXISTS known_tools`);
    await q.query(`DROP TABLE IF EXISTS approval_audit`);
    await q.query(`DROP TABLE IF EXISTS approval_bypasses`);
  }
}
