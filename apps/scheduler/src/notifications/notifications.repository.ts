import { randomUUID } from 'node:crypto';
import { Database } from '@skald/persistence/database';
import {
  DEFAULT_NOTIFICATION_SETTINGS,
  failedInARow,
  NotificationKind,
  NotificationRefs,
  NotificationSettings,
  type PushSubscriptionInput,
  type WebhookInput,
} from '@skald/contracts';
import {
  queryRows,
  type NotificationDeliveriesRow,
  type NotificationsRow,
  type NotificationSettingsRow,
  type PushSubscriptionsRow,
  type Queryable,
  type WebhooksRow,
} from '@skald/persistence';
import { channelsFor, heldByQuietHours, releaseTime, webhookHealthAfter, webhookTakes } from './delivery-rules';

/** A webhook row without its secret: what leaves this repository for its owner. */
export type WebhookView = Omit<WebhooksRow, 'secret' | 'sealed_secret'>;
const WEBHOOK_VIEW_COLS = `id, owner_id, scope, url, kinds, enabled, consecutive_failures, disabled_reason, created_at`;

/** A delivery claimed for one attempt, with what the channel needs. */
export interface ClaimedDelivery {
  delivery: NotificationDeliveriesRow;
  notification: NotificationsRow;
  /** The webhook of a webhook delivery (with its secret, for signing only). */
  webhook: WebhooksRow | null;
  /** The subscription of a push delivery (with its keys, for encrypting only); null once it is gone. */
  pushSubscription: PushSubscriptionsRow | null;
}

/** A push subscription without its keys: what leaves this repository for its owner. */
export type PushSubscriptionView = Omit<PushSubscriptionsRow, 'p256dh' | 'auth'>;
const PUSH_VIEW_COLS = `id, user_id, endpoint, user_agent, created_at, last_success_at`;

/** Push subscriptions one notification goes to at most (the newest ones). */
export const MAX_PUSH_TARGETS = 20;

export type DeliveryLogRow = NotificationDeliveriesRow & Pick<NotificationsRow, 'kind' | 'user_id'>;

const kindsOf = (kinds: string[] | null): NotificationKind[] | null =>
  kinds === null ? null : kinds.flatMap((k) => (NotificationKind.safeParse(k).success ? [k as NotificationKind] : []));

/** The outbox and the channels' targets. Every method a user reaches takes the owner. */
export class NotificationsRepository {
  constructor(private readonly ds: Database) {}

  async settings(userId: string, db: Queryable = this.ds): Promise<NotificationSettings> {
    const [row] = await queryRows<Pick<NotificationSettingsRow, 'settings'>>(
      db,
      `SELECT settings FROM notification_settings WHERE user_id = $1`,
      [userId],
    );
    const parsed = row ? NotificationSettings.safeParse(row.settings) : null;
    return parsed?.success ? parsed.data : DEFAULT_NOTIFICATION_SETTINGS;
  }

  async putSettings(userId: string, settings: NotificationSettings): Promise<void> {
    await this.ds.query(
      `INSERT INTO notification_settings (user_id, settings) VALUES ($1, $2)
       ON CONFLICT (user_id) DO UPDATE SET settings = EXCLUDED.settings, updated_at = now()`,
      [userId, JSON.stringify(settings)],
    );
  }

  /**
   * Writes a notification and its deliveries in one transaction, once per (user, event key): a
   * repeat writes nothing and answers the first one's pending deliveries (the caller may enqueue
   * them again; the queue drops a job it already holds).
   */
  async record(e: {
    userId: string;
    eventKey: string;
    kind: NotificationKind;
    summary: string;
    refs: NotificationRefs;
    emailEnabled: boolean;
    pushEnabled: boolean;
    now: Date;
  }): Promise<{
    notificationId: string;
    duplicate: boolean;
    due: Pick<NotificationDeliveriesRow, 'id' | 'attempts' | 'next_attempt_at'>[];
  }> {
    return this.ds.transaction(async (tx) => {
      const id = randomUUID();
      const [inserted] = await queryRows<Pick<NotificationsRow, 'id'>>(
        tx,
        `INSERT INTO notifications (id, user_id, event_key, kind, summary, refs, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (user_id, event_key) DO NOTHING RETURNING id`,
        [id, e.userId, e.eventKey, e.kind, e.summary, JSON.stringify(e.refs), e.now],
      );
      if (!inserted) {
        const [first] = await queryRows<Pick<NotificationsRow, 'id'>>(
          tx,
          `SELECT id FROM notifications WHERE user_id = $1 AND event_key = $2`,
          [e.userId, e.eventKey],
        );
        const due = await queryRows<Pick<NotificationDeliveriesRow, 'id' | 'attempts' | 'next_attempt_at'>>(
          tx,
          `SELECT id, attempts, next_attempt_at FROM notification_deliveries WHERE notification_id = $1 AND status = 'pending'`,
          [first.id],
        );
        return { notificationId: first.id, duplicate: true, due };
      }
      const settings = await this.settings(e.userId, tx);
      const channels = channelsFor(settings, e.kind);
      const hooks = await queryRows<Pick<WebhooksRow, 'id' | 'scope' | 'owner_id' | 'kinds'>>(
        tx,
        `SELECT id, scope, owner_id, kinds FROM webhooks
          WHERE enabled AND ((scope = 'user' AND owner_id = $1) OR scope = 'admin') ORDER BY created_at, id`,
        [e.userId],
      );
      const targets: {
        channel: 'webhook' | 'email' | 'push';
        webhookId: string | null;
        pushSubscriptionId: string | null;
        at: Date;
      }[] = [];
      for (const h of hooks) {
        // A user's own webhooks follow their settings; an admin's take what the admin chose.
        const wanted = h.scope === 'admin' || channels.includes('webhook');
        if (wanted && webhookTakes(kindsOf(h.kinds), e.kind))
          targets.push({ channel: 'webhook', webhookId: h.id, pushSubscriptionId: null, at: e.now });
      }
      if (e.emailEnabled && channels.includes('email'))
        targets.push({
          channel: 'email',
          webhookId: null,
          pushSubscriptionId: null,
          at: heldByQuietHours('email') ? releaseTime(e.now, settings.quiet_hours) : e.now,
        });
      if (e.pushEnabled && channels.includes('push')) {
        const subs = await queryRows<Pick<PushSubscriptionsRow, 'id'>>(
          tx,
          `SELECT id FROM push_subscriptions WHERE user_id = $1 ORDER BY created_at DESC, id LIMIT $2`,
          [e.userId, MAX_PUSH_TARGETS],
        );
        const at = heldByQuietHours('push') ? releaseTime(e.now, settings.quiet_hours) : e.now;
        for (const sub of subs) targets.push({ channel: 'push', webhookId: null, pushSubscriptionId: sub.id, at });
      }
      const due: Pick<NotificationDeliveriesRow, 'id' | 'attempts' | 'next_attempt_at'>[] = [];
      for (const t of targets) {
        const deliveryId = randomUUID();
        await tx.query(
          `INSERT INTO notification_deliveries
             (id, notification_id, channel, webhook_id, push_subscription_id, next_attempt_at, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
          [deliveryId, id, t.channel, t.webhookId, t.pushSubscriptionId, t.at, e.now],
        );
        due.push({ id: deliveryId, attempts: 0, next_attempt_at: t.at });
      }
      return { notificationId: id, duplicate: false, due };
    });
  }

  /**
   * Takes a due delivery for its next attempt: counts the attempt before it is made, fenced on the
   * count the job was enqueued with, and moves the due time past the attempt's lease, so neither a
   * job BullMQ hands out twice nor a job enqueued again meanwhile makes a second attempt (a crash
   * mid-attempt leaves it to the sweep once the lease has passed). Null when the delivery is no
   * longer pending, not yet due, or another attempt took it.
   */
  async claim(deliveryId: string, attempts: number, leaseMs: number): Promise<ClaimedDelivery | null> {
    const [delivery] = await queryRows<NotificationDeliveriesRow>(
      this.ds,
      `UPDATE notification_deliveries
          SET attempts = attempts + 1, updated_at = now(),
              next_attempt_at = now() + make_interval(secs => $3::double precision / 1000)
        WHERE id = $1 AND status = 'pending' AND attempts = $2 AND next_attempt_at <= now() + interval '5 seconds'
        RETURNING *`,
      [deliveryId, attempts, leaseMs],
    );
    if (!delivery) return null;
    const [notification] = await queryRows<NotificationsRow>(this.ds, `SELECT * FROM notifications WHERE id = $1`, [
      delivery.notification_id,
    ]);
    const [webhook] = delivery.webhook_id
      ? await queryRows<WebhooksRow>(this.ds, `SELECT * FROM webhooks WHERE id = $1`, [delivery.webhook_id])
      : [];
    const [pushSubscription] = delivery.push_subscription_id
      ? await queryRows<PushSubscriptionsRow>(this.ds, `SELECT * FROM push_subscriptions WHERE id = $1`, [
          delivery.push_subscription_id,
        ])
      : [];
    return { delivery, notification, webhook: webhook ?? null, pushSubscription: pushSubscription ?? null };
  }

  /**
   * Records how an attempt ended: delivered, failed, or pending again at `retryAt`. A webhook's
   * failure count moves with each ended delivery, in the same transaction; the answer says when
   * this one disabled it (the caller tells the owner, once).
   */
  async finish(o: {
    deliveryId: string;
    webhookId: string | null;
    outcome: { kind: 'delivered' } | { kind: 'failed'; error: string } | { kind: 'retry'; at: Date; error: string };
    responseCode: number | null;
    disableAfter: number;
  }): Promise<{ disabled: Pick<WebhooksRow, 'id' | 'owner_id' | 'url' | 'consecutive_failures'> | null }> {
    return this.ds.transaction(async (tx) => {
      const status = o.outcome.kind === 'retry' ? 'pending' : o.outcome.kind;
      const error = o.outcome.kind === 'delivered' ? null : o.outcome.error;
      await tx.query(
        `UPDATE notification_deliveries
            SET status = $2, last_error = $3, response_code = $4, updated_at = now(),
                next_attempt_at = COALESCE($5, next_attempt_at)
          WHERE id = $1`,
        [o.deliveryId, status, error, o.responseCode, o.outcome.kind === 'retry' ? o.outcome.at : null],
      );
      if (!o.webhookId || o.outcome.kind === 'retry') return { disabled: null };
      const [hook] = await queryRows<Pick<WebhooksRow, 'consecutive_failures' | 'enabled'>>(
        tx,
        `SELECT consecutive_failures, enabled FROM webhooks WHERE id = $1 FOR UPDATE`,
        [o.webhookId],
      );
      if (!hook) return { disabled: null };
      const health = webhookHealthAfter(hook.consecutive_failures, o.outcome.kind, o.disableAfter);
      const disableNow = health.disable && hook.enabled;
      const [row] = await queryRows<Pick<WebhooksRow, 'id' | 'owner_id' | 'url' | 'consecutive_failures'>>(
        tx,
        `UPDATE webhooks SET consecutive_failures = $2,
                enabled = enabled AND NOT $3,
                disabled_reason = CASE WHEN $3 THEN $4 ELSE disabled_reason END
          WHERE id = $1 RETURNING id, owner_id, url, consecutive_failures`,
        [
          o.webhookId,
          health.consecutiveFailures,
          disableNow,
          `disabled after ${failedInARow(health.consecutiveFailures)}; the last: ${error ?? ''}`.slice(0, 600),
        ],
      );
      return { disabled: disableNow ? row : null };
    });
  }

  /** Pending deliveries overdue by `graceMs` (their job was lost): the sweep's work, bounded by `limit`. */
  async overdue(graceMs: number, limit: number): Promise<Pick<NotificationDeliveriesRow, 'id' | 'attempts'>[]> {
    return queryRows<Pick<NotificationDeliveriesRow, 'id' | 'attempts'>>(
      this.ds,
      `SELECT id, attempts FROM notification_deliveries
        WHERE status = 'pending' AND next_attempt_at < now() - make_interval(secs => $1::double precision / 1000)
        ORDER BY next_attempt_at LIMIT $2`,
      [graceMs, limit],
    );
  }

  /** A new webhook under `id`, its secret sealed already (`sealedSecret`: bound to the id). */
  async createWebhook(ownerId: string, id: string, input: WebhookInput, sealedSecret: string): Promise<WebhookView> {
    const [row] = await queryRows<WebhookView>(
      this.ds,
      `INSERT INTO webhooks (id, owner_id, scope, url, sealed_secret, kinds) VALUES ($1, $2, $3, $4, $5, $6)
       RETURNING ${WEBHOOK_VIEW_COLS}`,
      [id, ownerId, input.scope, input.url, sealedSecret, input.kinds ?? null],
    );
    return row;
  }

  /** Webhooks whose secret is still in clear (written before secrets were sealed), at most `limit`. */
  async clearSecrets(limit: number): Promise<Pick<WebhooksRow, 'id' | 'secret'>[]> {
    return queryRows<Pick<WebhooksRow, 'id' | 'secret'>>(
      this.ds,
      `SELECT id, secret FROM webhooks WHERE secret IS NOT NULL ORDER BY id LIMIT $1`,
      [limit],
    );
  }

  /** Replaces a clear secret by its sealed form, in one statement; false when it was sealed meanwhile. */
  async sealSecret(webhookId: string, clear: string, sealed: string): Promise<boolean> {
    const rows = await queryRows<Pick<WebhooksRow, 'id'>>(
      this.ds,
      `UPDATE webhooks SET sealed_secret = $3, secret = NULL WHERE id = $1 AND secret = $2 RETURNING id`,
      [webhookId, clear, sealed],
    );
    return rows.length > 0;
  }

  async countWebhooks(ownerId: string): Promise<number> {
    const [r] = await queryRows<{ n: string }>(this.ds, `SELECT count(*) AS n FROM webhooks WHERE owner_id = $1`, [
      ownerId,
    ]);
    return Number(r?.n ?? 0);
  }

  async listWebhooks(ownerId: string): Promise<WebhookView[]> {
    return queryRows<WebhookView>(
      this.ds,
      `SELECT ${WEBHOOK_VIEW_COLS} FROM webhooks WHERE owner_id = $1 ORDER BY created_at, id`,
      [ownerId],
    );
  }

  async deleteWebhook(ownerId: string, webhookId: string): Promise<boolean> {
    const rows = await queryRows<Pick<WebhooksRow, 'id'>>(
      this.ds,
      `DELETE FROM webhooks WHERE id = $1 AND owner_id = $2 RETURNING id`,
      [webhookId, ownerId],
    );
    return rows.length > 0;
  }

  /** The latest deliveries of one of `ownerId`'s webhooks, newest first; null for a foreign or unknown id. */
  async deliveries(ownerId: string, webhookId: string, limit: number): Promise<DeliveryLogRow[] | null> {
    const [own] = await queryRows<Pick<WebhooksRow, 'id'>>(
      this.ds,
      `SELECT id FROM webhooks WHERE id = $1 AND owner_id = $2`,
      [webhookId, ownerId],
    );
    if (!own) return null;
    return queryRows<DeliveryLogRow>(
      this.ds,
      `SELECT d.*, n.kind, n.user_id FROM notification_deliveries d JOIN notifications n ON n.id = d.notification_id
        WHERE d.webhook_id = $1 ORDER BY d.created_at DESC, d.id LIMIT $2`,
      [webhookId, limit],
    );
  }

  // ------------------------------------------------------------------ push subscriptions

  /**
   * Adds `userId`'s subscription, or updates it when the endpoint is known (new keys, label): an
   * endpoint belongs to the account that subscribed it last (one browser, another account signed
   * in). `created` is false when it was the caller's already.
   */
  async upsertPushSubscription(
    userId: string,
    input: PushSubscriptionInput,
  ): Promise<{ row: PushSubscriptionView; created: boolean }> {
    const [row] = await queryRows<PushSubscriptionView & { previous_owner: string | null }>(
      this.ds,
      `WITH previous AS (SELECT user_id FROM push_subscriptions WHERE endpoint = $3)
       INSERT INTO push_subscriptions (id, user_id, endpoint, p256dh, auth, user_agent)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (endpoint) DO UPDATE
         SET user_id = EXCLUDED.user_id, p256dh = EXCLUDED.p256dh, auth = EXCLUDED.auth,
             user_agent = EXCLUDED.user_agent,
             created_at = CASE WHEN push_subscriptions.user_id = EXCLUDED.user_id
                               THEN push_subscriptions.created_at ELSE now() END,
             last_success_at = CASE WHEN push_subscriptions.user_id = EXCLUDED.user_id
                                    THEN push_subscriptions.last_success_at END
       RETURNING ${PUSH_VIEW_COLS}, (SELECT user_id FROM previous) AS previous_owner`,
      [randomUUID(), userId, input.endpoint, input.keys.p256dh, input.keys.auth, input.user_agent ?? ''],
    );
    const { previous_owner, ...view } = row;
    return { row: view, created: previous_owner !== userId };
  }

  async countPushSubscriptions(userId: string): Promise<number> {
    const [r] = await queryRows<{ n: string }>(
      this.ds,
      `SELECT count(*) AS n FROM push_subscriptions WHERE user_id = $1`,
      [userId],
    );
    return Number(r?.n ?? 0);
  }

  /** Whether `endpoint` is one of `userId`'s subscriptions already (a repeat subscribe is not a new one). */
  async ownsPushEndpoint(userId: string, endpoint: string): Promise<boolean> {
    const rows = await queryRows<Pick<PushSubscriptionsRow, 'id'>>(
      this.ds,
      `SELECT id FROM push_subscriptions WHERE user_id = $1 AND endpoint = $2`,
      [userId, endpoint],
    );
    return rows.length > 0;
  }

  async listPushSubscriptions(userId: string): Promise<PushSubscriptionView[]> {
    return queryRows<PushSubscriptionView>(
      this.ds,
      `SELECT ${PUSH_VIEW_COLS} FROM push_subscriptions WHERE user_id = $1 ORDER BY created_at, id`,
      [userId],
    );
  }

  async deletePushSubscription(userId: string, subscriptionId: string): Promise<boolean> {
    const rows = await queryRows<Pick<PushSubscriptionsRow, 'id'>>(
      this.ds,
      `DELETE FROM push_subscriptions WHERE id = $1 AND user_id = $2 RETURNING id`,
      [subscriptionId, userId],
    );
    return rows.length > 0;
  }

  /** The push service said the subscription no longer exists (404/410): it goes. */
  async dropGonePushSubscription(subscriptionId: string): Promise<void> {
    await this.ds.query(`DELETE FROM push_subscriptions WHERE id = $1`, [subscriptionId]);
  }

  async pushDelivered(subscriptionId: string): Promise<void> {
    await this.ds.query(`UPDATE push_subscriptions SET last_success_at = now() WHERE id = $1`, [subscriptionId]);
  }
}
