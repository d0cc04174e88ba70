import { MigrationInterface, QueryRunner } from 'typeorm';

/** The surfaces a human answers from (contracts' `ApprovalChannel`; a migration never changes once landed). */
const CHANNELS = `'card', 'inbox', 'cli', 'push', 'api'`;

/**
 * Approval service: where a human answered a request (`channel`: the chat card, the inbox, the CLI,
 * a push notification, the REST API) and the session approval the answer opened (`bypass`: `{scope,
 * secs?}` as the approver asked), on the request and, the channel, on its audit row.
 */
export class DecisionChannel1764460806200 implements MigrationInterface {
  name = 'DecisionChannel1764460806200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE approval_requests ADD COLUMN channel text CHECK (channel IN (${CHANNELS}))`);
    await q.query(`ALTER TABLE approval_requests ADD COLUMN bypass jsonb`);
    await q.query(`ALTER TABLE approval_audit ADD COLUMN channel text CHECK (channel IN (${CHANNELS}))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE approval_audit DROP COLUMN channel`);
    await q.query(`ALTER TABLE approval_requests DROP COLUMN bypass`);
    await q.query(`ALTER TABLE approval_requests DROP COLUMN channel`);
  }
}
