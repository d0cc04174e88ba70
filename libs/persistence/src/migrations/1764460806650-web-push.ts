import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Web Push.
 *
 * - `push_subscriptions` (the scheduler's): a browser's push subscription for one user, unique on
 *   its `endpoint` (a subscription moved to another account is the other account's now), with the
 *   keys the payload is encrypted to (`p256dh`, `auth`), a label for the owner (`user_agent`), and
 *   the last time a push reached it. A 404 or 410 from the push service deletes it.
 * - `notification_deliveries` gains `push_subscription_id`: a push delivery is one notification
 *   on one subscription (its row is kept, the id cleared, when the subscription goes).
 * - `approval_action_tokens` (the approval service's): the action tokens a push notification's
 *   Approve and Reject carry, by the SHA-256 of the token only: the request and user they act
 *   for, the SHA-256 of the call they were minted for (tool and arguments), when they expire and
 *   when they were used (once).
 */
export class WebPush1764460806650 implements MigrationInterface {
  name = 'WebPush1764460806650';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE push_subscriptions (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        endpoint text NOT NULL UNIQUE,
        p256dh text NOT NULL,
        auth text NOT NULL,
        user_agent text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL DEFAULT now(),
        last_success_at timestamptz
      )`);
    await q.query(`CREATE INDEX push_subscriptions_user_idx ON push_subscriptions (user_id, created_at)`);
    await q.query(
      `ALTER TABLE notification_deliveries ADD COLUMN push_subscription_id uuid REFERENCES push_subscriptions(id) ON DELETE SET NULL`,
    );
    await q.query(`ALTER TABLE notification_deliveries DROP CONSTRAINT notification_deliveries_channel_check`);
    await q.query(
      `ALTER TABLE notification_deliveries ADD CONSTRAINT notification_deliveries_channel_check CHECK (channel IN ('webhook', 'email', 'push'))`,
    );
    await q.query(`DROP INDEX notification_deliveries_target_idx`);
    await q.query(
      `CREATE UNIQUE INDEX notification_deliveries_target_idx ON notification_deliveries (notification_id, channel, COALESCE(webhook_id, push_subscription_id, '00000000-0000-0000-0000-000000000000'::uuid))`,
    );
    await q.query(`
      CREATE TABLE approval_action_tokens (
        token_hash text PRIMARY KEY,
        request_id uuid NOT NULL REFERENCES approval_requests(id) ON DELETE CASCADE,
        user_id uuid NOT NULL,
        call_hash text NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX approval_action_tokens_request_idx ON approval_action_tokens (request_id)`);
    await q.query(`CREATE INDEX approval_action_tokens_expiry_idx ON approval_action_tokens (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE approval_action_tokens`);
    await q.query(`DELETE FROM notification_deliveries WHERE channel = 'push'`);
    await q.query(`DROP INDEX notification_deliveries_target_idx`);
    await q.query(
      `CREATE UNIQUE INDEX notification_deliveries_target_idx ON notification_deliveries (notification_id, channel, COALESCE(webhook_id, '00000000-0000-0000-0000-000000000000'::uuid))`,
    );
    await q.query(`ALTER TABLE notification_deliveries DROP CONSTRAINT notification_deliveries_channel_check`);
    await q.query(
      `ALTER TABLE notification_deliveries ADD CONSTRAINT notification_deliveries_channel_check CHECK (channel IN ('webhook', 'email'))`,
    );
    await q.query(`ALTER TABLE notification_deliveries DROP COLUMN push_subscription_id`);
    await q.query(`DROP TABLE push_subscriptions`);
  }
}
