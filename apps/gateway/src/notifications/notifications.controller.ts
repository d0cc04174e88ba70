import { Body, Controller, Param } from '@nestjs/common';
import { Actor, Id, ROUTES } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { CurrentActor } from '../auth/actor.decorator';
import { ApiError, callService } from '../http/api-error';
import { Route } from '../http/route.decorator';
import { validate } from '../http/validate';

const webhookId = (id: string): string => {
  if (!Id.safeParse(id).success) throw new ApiError('not_found', 'webhook not found');
  return id;
};

/** Notification settings, webhooks and their delivery logs, push subscriptions; kept by the scheduler. */
@Controller()
export class NotificationsController {
  constructor(private readonly bus: Bus) {}

  @Route(ROUTES.getNotificationSettings)
  settings(@CurrentActor() actor: Actor) {
    return this.call(() => this.bus.call('notify.settings.get', { actor }));
  }

  @Route(ROUTES.putNotificationSettings)
  putSettings(@CurrentActor() actor: Actor, @Body() body: unknown) {
    const settings = validate(ROUTES.putNotificationSettings.body, body);
    return this.call(() => this.bus.call('notify.settings.put', { actor, settings }));
  }

  @Route(ROUTES.listWebhooks)
  list(@CurrentActor() actor: Actor) {
    return this.call(() => this.bus.call('notify.webhooks.list', { actor }));
  }

  @Route(ROUTES.createWebhook)
  create(@CurrentActor() actor: Actor, @Body() body: unknown) {
    const webhook = validate(ROUTES.createWebhook.body, body);
    return this.call(() => this.bus.call('notify.webhooks.create', { actor, webhook }));
  }

  @Route(ROUTES.deleteWebhook)
  async delete(@CurrentActor() actor: Actor, @Param('id') id: string) {
    await this.call(() => this.bus.call('notify.webhooks.delete', { actor, webhook_id: webhookId(id) }));
  }

  @Route(ROUTES.listWebhookDeliveries)
  deliveries(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.call(() => this.bus.call('notify.webhooks.deliveries', { actor, webhook_id: webhookId(id) }));
  }

  @Route(ROUTES.getPushKey)
  pushKey(@CurrentActor() actor: Actor) {
    return this.call(() => this.bus.call('notify.push.key', { actor }));
  }

  @Route(ROUTES.listPushSubscriptions)
  listPush(@CurrentActor() actor: Actor) {
    return this.call(() => this.bus.call('notify.push.list', { actor }));
  }

  @Route(ROUTES.subscribePush)
  subscribePush(@CurrentActor() actor: Actor, @Body() body: unknown) {
    const subscription = validate(ROUTES.subscribePush.body, body);
    return this.call(() => this.bus.call('notify.push.subscribe', { actor, subscription }));
  }

  @Route(ROUTES.deletePushSubscription)
  async deletePush(@CurrentActor() actor: Actor, @Param('id') id: string) {
    if (!Id.safeParse(id).success) throw new ApiError('not_found', 'push subscription not found');
    await this.call(() => this.bus.call('notify.push.delete', { actor, subscription_id: id }));
  }

  private call<T>(fn: () => Promise<T>): Promise<T> {
    return callService('the scheduler is not available; retry shortly', fn);
  }
}
