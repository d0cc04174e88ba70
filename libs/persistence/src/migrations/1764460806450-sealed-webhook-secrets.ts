import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Scheduler: a webhook's signing secret at rest is sealed with the deployment's `SKALD_SECRETS_KEY`
 * (`sealed_secret`, AES-256-GCM bound to the webhook), never stored in clear. The key is not the
 * database's, so SQL cannot seal: a row written before this keeps its clear `secret` until the
 * scheduler's start seals it (the same statement sets `sealed_secret` and clears `secret`); every
 * row holds exactly one of the two.
 */
export class SealedWebhookSecrets1764460806450 implements MigrationInterface {
  name = 'SealedWebhookSecrets1764460806450';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhooks ADD COLUMN sealed_secret text`);
    await q.query(`ALTER TABLE webhooks ALTER COLUMN secret DROP NOT NULL`);
    await q.query(
      `ALTER TABLE webhooks ADD CONSTRAINT webhooks_one_secret CHECK ((secret IS NULL) <> (sealed_secret IS NULL))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    // A sealed secret cannot be opened here (the key is not the database's): such a webhook goes,
    // as it could no longer sign.
    await q.query(`DELETE FROM webhooks WHERE secret IS NULL`);
    await q.query(`ALTER TABLE webhooks DROP CONSTRAINT webhooks_one_secret`);
    await q.query(`ALTER TABLE webhooks ALTER COLUMN secret SET NOT NULL`);
    await q.query(`ALTER TABLE webhooks DROP COLUMN sealed_secret`);
  }
}
