import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Edit before approve. `approval_requests.gate_context`: what the gate judged the call with (its
 * agent, security group and RunContext, sent with `approval.register`), so that an edited call is
 * judged again with exactly these; `edited_arguments` and `edit_diff`: the arguments a human
 * approved instead of the model's, and a unified diff of each changed argument. On
 * `approval_audit`, the human's decision row names the edit: `edited_args_digest` and `edit_diff`
 * (`args_digest` stays the original's). Null on rows written before, and on calls not edited.
 */
export class ApprovalEdits1764460806100 implements MigrationInterface {
  name = 'ApprovalEdits1764460806100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE approval_requests ADD COLUMN gate_context jsonb`);
    await q.query(`ALTER TABLE approval_requests ADD COLUMN edited_arguments text`);
    await q.query(`ALTER TABLE approval_requests ADD COLUMN edit_diff text`);
    await q.query(`ALTER TABLE approval_audit ADD COLUMN edited_args_digest text`);
    await q.query(`ALTER TABLE approval_audit ADD COLUMN edit_diff text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE approval_audit DROP COLUMN edit_diff`);
    await q.query(`ALTER TABLE approval_audit DROP COLUMN edited_args_digest`);
    await q.query(`ALTER TABLE approval_requests DROP COLUMN edit_diff`);
    await q.query(`ALTER TABLE approval_requests DROP COLUMN edited_arguments`);
    await q.query(`ALTER TABLE approval_requests DROP COLUMN gate_context`);
  }
}
