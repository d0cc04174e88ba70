import { MigrationInterface, QueryRunner } from 'typeorm';
import { DEFAULT_APPROVAL_RULES } from './1764460800001-default-approval-rules';

/** The seed row of the `user-memory/` write exception: now a built-in rule of the gate (code, not a row). */
const USER_MEMORY_WRITES_SEED = '00000000-0000-4000-8000-000000000001';

/**
 * The `user-memory/` write exception and the `shared-memory/` admin-only rule are code in the
 * approval service, evaluated before every stored rule; the seed row that stood for the first one
 * is removed so that the console does not show a deletable copy of it.
 */
export class BuiltInApprovalRules1764460802170 implements MigrationInterface {
  name = 'BuiltInApprovalRules1764460802170';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM approval_rules WHERE id = $1 AND is_seed`, [USER_MEMORY_WRITES_SEED]);
  }

  async down(q: QueryRunner): Promise<void> {
    const r = DEFAULT_APPROVAL_RULES.find((x) => x.id === USER_MEMORY_WRITES_SEED);
    if (!r) return;
    await q.query(
      `INSERT INTO approval_rules (id, tool_pattern, path_pattern, action, priority, note, is_seed)
       VALUES ($1, $2, $3, $4, $5, $6, true) ON CONFLICT (id) DO NOTHING`,
      [r.id, r.tool_pattern, r.path_pattern ?? null, r.action, r.priority, r.note],
    );
  }
}
