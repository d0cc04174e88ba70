import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Regenerate and edit-and-resend as inbox items: the rewind is stored in the durable
 * inbox under the client's id (so a retry is acknowledged as a duplicate and changes nothing) and
 * carried out when the item starts its turn, in the same commit — superseding the rows and
 * entering the input never happen apart. `rewind_kind` `regenerate`: the rows after the user
 * message `rewind_message_id` are superseded and the turn answers that message again (no new
 * row); `edit`: that message and everything after it are superseded and the item's content
 * enters as a new user message.
 */
export class InboxRewind1764460805000 implements MigrationInterface {
  name = 'InboxRewind1764460805000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE session_inbox ADD COLUMN rewind_kind text CHECK (rewind_kind IN ('regenerate', 'edit'))`,
    );
    await q.query(`ALTER TABLE session_inbox ADD COLUMN rewind_message_id uuid`);
    await q.query(
      `ALTER TABLE session_inbox ADD CONSTRAINT session_inbox_rewind_check
         CHECK ((rewind_kind IS NULL) = (rewind_message_id IS NULL))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE session_inbox DROP CONSTRAINT session_inbox_rewind_check`);
    await q.query(`ALTER TABLE session_inbox DROP COLUMN rewind_message_id`);
    await q.query(`ALTER TABLE session_inbox DROP COLUMN rewind_kind`);
  }
}
