import type { WebhookEventBody } from '@skald/contracts';
import { AddressPolicy } from '@skald/service-kit';
import type { AttemptResult } from '../delivery-rules';
import { signWebhook } from '../webhook-signature';
import { DeliveryTarget, NotificationChannel, OutgoingNotification, postOnce } from './notification-channel';

export interface WebhookChannelOptions {
  /** The SSRF guard (the one MCP HTTP servers go through), checked again at every connection. */
  policy: AddressPolicy;
  /** A receiver that has not answered in this long has failed this attempt. */
  timeoutMs: number;
  now: () => Date;
}

/** The signed JSON body a webhook receives (WebhookEventBody, version 1). */
export function webhookBody(n: OutgoingNotification): string {
  const body: WebhookEventBody = {
    version: 1,
    id: n.deliveryId,
    kind: n.kind,
    created_at: n.createdAt.toISOString(),
    user_id: n.userId,
    summary: n.summary,
    link: n.link,
    refs: n.refs,
  };
  return JSON.stringify(body);
}

/**
 * Webhooks: one signed POST per attempt, through the guarded fetch (so a name that resolves to a
 * private address, or starts to, is refused at connect time: DNS rebinding), redirects never
 * followed, the answer's body never read past its status.
 */
export class WebhookChannel implements NotificationChannel<'webhook'> {
  readonly name = 'webhook' as const;
  readonly enabled = true;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: WebhookChannelOptions) {
    this.fetch = options.policy.guardedFetch();
  }

  async attempt(
    n: OutgoingNotification,
    target: Extract<DeliveryTarget, { channel: 'webhook' }>,
    signal: AbortSignal,
  ): Promise<AttemptResult> {
    const body = webhookBody(n);
    const headers = signWebhook(target.secret, n.deliveryId, Math.floor(this.options.now().getTime() / 1000), body);
    const sent = await postOnce(
      this.fetch,
      target.url,
      { headers: { 'content-type': 'application/json', 'user-agent': 'Skald-Webhooks/1', ...headers }, body },
      signal,
      this.options.timeoutMs,
    );
    if (!('status' in sent)) return sent;
    const { status } = sent;
    if (status >= 200 && status < 300) return { kind: 'delivered', responseCode: status };
    if (status >= 300 && status < 400)
      return { kind: 'permanent', error: `HTTP ${status}: redirects are not followed`, responseCode: status };
    if (status === 410) return { kind: 'permanent', error: 'HTTP 410: the receiver is gone', responseCode: status };
    return { kind: 'transient', error: `HTTP ${status}`, responseCode: status };
  }
}
