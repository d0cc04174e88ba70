import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `approval_requests.turn_id`: the turn that asked (the id of the message that started it), sent
 * by the worker with `approval.register`. The answer comes from a person, whose resolve names no
 * turn: the approval service's "human request resolved" line reads it from here, so every log line
 * about a turn carries its `turnId` (docs/operations.md). Null on rows written before.
 */
export class RequestTurn1764460805200 implements MigrationInterface {
  name = 'RequestTurn1764460805200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE approval_requests ADD COLUMN turn_id uuid`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE approval_requests DROP COLUMN turn_id`);
  }
}
