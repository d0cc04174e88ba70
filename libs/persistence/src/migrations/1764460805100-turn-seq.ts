import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `sessions.turn_seq` (history by REST): the seq of the session's last event before its
 * current turn began, written in the commit that starts the turn. The chat history endpoint
 * answers, with its page, the seq a client resumes after: the session's `last_seq` when no turn
 * is unfinished, else `turn_seq` — the running turn's cards (tools, approvals, sub-agents) are
 * rebuilt from its events. Null on rows written before: such a turn is replayed from the start.
 */
export class TurnSeq1764460805100 implements MigrationInterface {
  name = 'TurnSeq1764460805100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ADD COLUMN turn_seq bigint`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions DROP COLUMN turn_seq`);
  }
}
