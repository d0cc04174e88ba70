import type { WebhookEventBody } from '@skald/contracts';
import { AddressPolicy, BlockedAddressError } from '@skald/service-kit';
import type { AttemptResult } from '../delivery-rules';
import { signWebhook } from '../webhook-signature';
import { describeError, DeliveryTarget, NotificationChannel, OutgoingNotification } from './notification-channel';

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

function blockedIn(e: unknown): BlockedAddressError | undefined {
  let cur: unknown = e;
  for (let depth = 0; depth < 4 && cur; depth++) {
    if (cur instanceof BlockedAddressError) return cur;
    cur = cur instanceof Error ? cur.cause : undefined;
  }
  return undefined;
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
    let status: number;
    try {
      const res = await this.fetch(target.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'Skald-Webhooks/1', ...headers },
        body,
        signal: AbortSignal.any([signal, AbortSignal.timeout(this.options.timeoutMs)]),
      });
      status = res.status;
      await res.body?.cancel().catch(() => undefined);
    } catch (e) {
      const blocked = blockedIn(e);
      if (blocked) return { kind: 'permanent', error: blocked.message };
      return { kind: 'transient', error: describeError(e) };
    }
    if (status >= 200 && status < 300) return { kind: 'delivered', responseCode: status };
    if (status >= 300 && status < 400)
      return { kind: 'permanent', error: `HTTP ${status}: redirects are not followed`, responseCode: status };
    if (status === 410) return { kind: 'permanent', error: 'HTTP 410: the receiver is gone', responseCode: status };
    return { kind: 'transient', error: `HTTP ${status}`, responseCode: status };
  }
}
