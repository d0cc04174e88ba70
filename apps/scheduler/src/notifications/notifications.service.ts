import type {
  Actor,
  DeliveryDto,
  NotificationSettings,
  WebhookCreated,
  WebhookDto,
  WebhookInput,
} from '@skald/contracts';
import { RemoteError } from '@skald/messaging';
import { AddressPolicy, BlockedAddressError } from '@skald/service-kit';
import { generateWebhookSecret } from './webhook-signature';
import { DeliveryLogRow, NotificationsRepository, WebhookView } from './notifications.repository';

/** Webhooks one account may have; one more is refused. */
export const MAX_WEBHOOKS_PER_USER = 10;
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

  /** Checks the target now (it is checked again at every connection), then shows the secret once. */
  async createWebhook(actor: Actor, input: WebhookInput): Promise<WebhookCreated> {
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
    const row = await this.repo.createWebhook(actor.userId, input, secret);
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
}
