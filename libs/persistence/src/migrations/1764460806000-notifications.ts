import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Durable notifications (the scheduler's): the outbox and the channels' targets.
 *
 * - `notification_settings`: per user, which kinds go to which channel, and quiet hours (JSON of
 *   the contract `NotificationSettings`); no row means the defaults.
 * - `webhooks`: a user's own (`scope` `user`: their events), or an admin's (`admin`: every user's
 *   events, `kinds` null for all). `secret` signs the bodies and is shown once, at creation.
 *   `consecutive_failures` counts deliveries that failed in a row; at the bound the webhook is
 *   disabled (`disabled_reason`) and its owner told.
 * - `notifications`: one row per event and recipient, unique on (`user_id`, `event_key`), the
 *   event's own id, so a redelivered event is written once.
 * - `notification_deliveries`: one row per notification and channel target (the delivery log):
 *   `pending` until `delivered` or `failed` (after `attempts`, the last error and response code);
 *   `next_attempt_at` is when a pending one is due (quiet hours hold it; the sweep re-enqueues the
 *   overdue ones, so a lost job only delays it).
 */
export class Notifications1764460806000 implements MigrationInterface {
  name = 'Notifications1764460806000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE notification_settings (
        user_id uuid PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
        settings jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE webhooks (
        id uuid PRIMARY KEY,
        owner_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        scope text NOT NULL CHECK (scope IN ('user', 'admin')),
        url text NOT NULL,
        secret text NOT NULL,
        kinds text[],
        enabled boolean NOT NULL DEFAULT true,
        consecutive_failures integer NOT NULL DEFAULT 0,
        disabled_reason text,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX webhooks_owner_idx ON webhooks (owner_id)`);
    await q.query(`CREATE INDEX webhooks_admin_idx ON webhooks (scope) WHERE scope = 'admin' AND enabled`);
    await q.query(`
      CREATE TABLE notifications (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        event_key text NOT NULL,
        kind text NOT NULL,
        summary text NOT NULL,
        refs jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (user_id, event_key)
      )`);
    await q.query(`
      CREATE TABLE notification_deliveries (
        id uuid PRIMARY KEY,
        notification_id uuid NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
        channel text NOT NULL CHECK (channel IN ('webhook', 'email')),
        webhook_id uuid REFERENCES webhooks(id) ON DELETE CASCADE,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        last_error text,
        response_code integer,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((channel = 'webhook') = (webhook_id IS NOT NULL))
      )`);
    await q.query(
      `CREATE UNIQUE INDEX notification_deliveries_target_idx ON notification_deliveries (notification_id, channel, COALESCE(webhook_id, '00000000-0000-0000-0000-000000000000'::uuid))`,
    );
    await q.query(
      `CREATE INDEX notification_deliveries_due_idx ON notification_deliveries (next_attempt_at) WHERE status = 'pending'`,
    );
    await q.query(
      `CREATE INDEX notification_deliveries_webhook_idx ON notification_deliveries (webhook_id, created_at)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE notification_deliveries`);
    await q.query(`DROP TABLE notifications`);
    await q.query(`DROP TABLE webhooks`);
    await q.query(`DROP TABLE notification_settings`);
  }
}
