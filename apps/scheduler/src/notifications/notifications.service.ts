import type {
  Actor,
  DeliveryDto,
  NotificationSettings,
  PushKeyDto,
  PushSubscribed,
  PushSubscriptionDto,
  PushSubscriptionInput,
  WebhookCreated,
  WebhookDto,
  WebhookInput,
} from '@skald/contracts';
import { RemoteError } from '@skald/messaging/bus-errors';
import { randomUUID } from 'node:crypto';
import { AddressPolicy, BlockedAddressError } from '@skald/service-kit';
import { endpointRefusal } from './channels/push.channel';
import type { WebhookSecrets } from './webhook-secrets';
import { generateWebhookSecret } from './webhook-signature';
import { DeliveryLogRow, NotificationsRepository, PushSubscriptionView, WebhookView } from './notifications.repository';

/** Webhooks one account may have; one more is refused. */
export const MAX_WEBHOOKS_PER_USER = 10;
/** Push subscriptions (browsers, devices) one account may have; one more is refused. */
export const MAX_PUSH_SUBSCRIPTIONS_PER_USER = 20;
/** Deliveries a log page shows. */
const LOG_PAGE = 100;

const notFound = (): RemoteError => new RemoteError({ code: 'not_found', message: 'webhook not found' });

export function toWebhookDto(w: WebhookView): WebhookDto {
  return {
    id: w.id,
    url: w.url,
    scope: w.scope,
    kinds: (w.kinds as WebhookDto['kinds']) ?? null,
    enabled: w.enabled,
    consecutive_failures: w.consecutive_failures,
    disabled_reason: w.disabled_reason,
    created_at: w.created_at.toISOString(),
  };
}

export function toPushSubscriptionDto(p: PushSubscriptionView): PushSubscriptionDto {
  return {
    id: p.id,
    endpoint: p.endpoint,
    user_agent: p.user_agent,
    created_at: p.created_at.toISOString(),
    last_success_at: p.last_success_at ? p.last_success_at.toISOString() : null,
  };
}

function toDeliveryDto(d: DeliveryLogRow): DeliveryDto {
  return {
    id: d.id,
    notification_id: d.notification_id,
    kind: d.kind as DeliveryDto['kind'],
    user_id: d.user_id,
    status: d.status,
    attempts: d.attempts,
    next_attempt_at: d.status === 'pending' ? d.next_attempt_at.toISOString() : null,
    last_error: d.last_error,
    response_code: d.response_code,
    created_at: d.created_at.toISOString(),
    updated_at: d.updated_at.toISOString(),
  };
}

/** The REST side of notifications: settings, webhooks and their delivery logs, each scoped by its owner. */
export class NotificationsService {
  constructor(
    private readonly repo: NotificationsRepository,
    private readonly policy: AddressPolicy,
    private readonly secrets: WebhookSecrets,
    /** The VAPID public key browsers subscribe with; null when push is off. */
    private readonly vapidPublicKey: string | null = null,
  ) {}

  settings(actor: Actor): Promise<NotificationSettings> {
    return this.repo.settings(actor.userId);
  }

  async putSettings(actor: Actor, settings: NotificationSettings): Promise<NotificationSettings> {
    await this.repo.putSettings(actor.userId, settings);
    return settings;
  }

  async listWebhooks(actor: Actor): Promise<{ items: WebhookDto[] }> {
    return { items: (await this.repo.listWebhooks(actor.userId)).map(toWebhookDto) };
  }

  /**
   * Checks the target now (it is checked again at every connection), stores the secret sealed,
   * then shows it once. Without `SKALD_SECRETS_KEY` no webhook is added.
   */
  async createWebhook(actor: Actor, input: WebhookInput): Promise<WebhookCreated> {
    if (!this.secrets.configured)
      throw new RemoteError({
        code: 'invalid_input',
        message: 'webhooks cannot be added: the operator has not configured SKALD_SECRETS_KEY',
        field: 'url',
      });
    if (input.scope === 'admin' && actor.role !== 'admin')
      throw new RemoteError({ code: 'forbidden', message: 'only an admin may add an admin webhook', field: 'scope' });
    if (input.scope === 'user' && input.kinds !== undefined)
      throw new RemoteError({
        code: 'invalid_input',
        message:
          'a user webhook takes the kinds your notification settings send to webhooks; kinds is for admin webhooks',
        field: 'kinds',
      });
    try {
      await this.policy.checkUrl(new URL(input.url));
    } catch (e) {
      const message =
        e instanceof BlockedAddressError
          ? e.message
          : `the webhook host could not be resolved: ${new URL(input.url).hostname}`;
      throw new RemoteError({ code: 'invalid_input', message, field: 'url' });
    }
    if ((await this.repo.countWebhooks(actor.userId)) >= MAX_WEBHOOKS_PER_USER)
      throw new RemoteError({
        code: 'invalid_input',
        message: `an account has at most ${MAX_WEBHOOKS_PER_USER} webhooks; remove one first`,
        field: 'url',
      });
    const secret = generateWebhookSecret();
    const id = randomUUID();
    const row = await this.repo.createWebhook(actor.userId, id, input, this.secrets.seal(id, secret));
    return { webhook: toWebhookDto(row), secret };
  }

  async deleteWebhook(actor: Actor, webhookId: string): Promise<{ deleted: true }> {
    if (!(await this.repo.deleteWebhook(actor.userId, webhookId))) throw notFound();
    return { deleted: true };
  }

  async deliveries(actor: Actor, webhookId: string): Promise<{ items: DeliveryDto[] }> {
    const rows = await this.repo.deliveries(actor.userId, webhookId, LOG_PAGE);
    if (!rows) throw notFound();
    return { items: rows.map(toDeliveryDto) };
  }

  pushKey(): PushKeyDto {
    return { public_key: this.vapidPublicKey };
  }

  async listPushSubscriptions(actor: Actor): Promise<{ items: PushSubscriptionDto[] }> {
    return { items: (await this.repo.listPushSubscriptions(actor.userId)).map(toPushSubscriptionDto) };
  }

  /**
   * Checks the endpoint now (https, not a private address unless allow-listed; checked again at
   * every delivery), then adds the subscription or updates the caller's (idempotent on the endpoint).
   */
  async subscribePush(actor: Actor, input: PushSubscriptionInput): Promise<PushSubscribed> {
    if (this.vapidPublicKey === null)
      throw new RemoteError({ code: 'unavailable', message: 'push notifications are not configured on this server' });
    const refusal = endpointRefusal(input.endpoint, this.policy);
    if (refusal) throw new RemoteError({ code: 'invalid_input', message: refusal, field: 'endpoint' });
    const url = new URL(input.endpoint);
    try {
      await this.policy.checkUrl(url);
    } catch (e) {
      const message =
        e instanceof BlockedAddressError ? e.message : `the push endpoint host could not be resolved: ${url.hostname}`;
      throw new RemoteError({ code: 'invalid_input', message, field: 'endpoint' });
    }
    if (
      !(await this.repo.ownsPushEndpoint(actor.userId, input.endpoint)) &&
      (await this.repo.countPushSubscriptions(actor.userId)) >= MAX_PUSH_SUBSCRIPTIONS_PER_USER
    )
      throw new RemoteError({
        code: 'invalid_input',
        message: `an account has at most ${MAX_PUSH_SUBSCRIPTIONS_PER_USER} push subscriptions; remove one first`,
        field: 'endpoint',
      });
    const { row, created } = await this.repo.upsertPushSubscription(actor.userId, input);
    return { subscription: toPushSubscriptionDto(row), created };
  }

  async deletePushSubscription(actor: Actor, subscriptionId: string): Promise<{ deleted: true }> {
    if (!(await this.repo.deletePushSubscription(actor.userId, subscriptionId)))
      throw new RemoteError({ code: 'not_found', message: 'push subscription not found' });
    return { deleted: true };
  }
}
