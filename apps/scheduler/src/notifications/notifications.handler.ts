import type { Bus } from '@skald/messaging/bus-port';
import type { NotificationPipeline } from './notification-pipeline';
import type { NotificationsService } from './notifications.service';

/** NATS edge of notifications: parse (the Bus does), make one call. */
export function registerNotificationHandlers(
  bus: Bus,
  service: NotificationsService,
  pipeline: NotificationPipeline,
): void {
  bus.handle('notify.event', (r) =>
    pipeline.ingest({ userId: r.user_id, eventKey: r.event_key, kind: r.kind, summary: r.summary, refs: r.refs }),
  );
  bus.handle('notify.settings.get', (r) => service.settings(r.actor));
  bus.handle('notify.settings.put', (r) => service.putSettings(r.actor, r.settings));
  bus.handle('notify.webhooks.list', (r) => service.listWebhooks(r.actor));
  bus.handle('notify.webhooks.create', (r) => service.createWebhook(r.actor, r.webhook));
  bus.handle('notify.webhooks.delete', (r) => service.deleteWebhook(r.actor, r.webhook_id));
  bus.handle('notify.webhooks.deliveries', (r) => service.deliveries(r.actor, r.webhook_id));
  bus.handle('notify.push.key', () => Promise.resolve(service.pushKey()));
  bus.handle('notify.push.list', (r) => service.listPushSubscriptions(r.actor));
  bus.handle('notify.push.subscribe', (r) => service.subscribePush(r.actor, r.subscription));
  bus.handle('notify.push.delete', (r) => service.deletePushSubscription(r.actor, r.subscription_id));
}
