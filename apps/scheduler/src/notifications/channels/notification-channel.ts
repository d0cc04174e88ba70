import { inspect } from 'node:util';
import type { NotificationChannelName, NotificationKind, NotificationRefs } from '@skald/contracts';
import { BlockedAddressError } from '@skald/service-kit';
import type { AttemptResult } from '../delivery-rules';

/**
 * The seam every channel plugs into: a channel is how one notification reaches one target (a
 * webhook URL, an e-mail address, a browser's push subscription). The pipeline owns the rows, the
 * retries, quiet hours and the sweep; a channel makes one attempt and says how it went, never
 * throwing for a failure of the target.
 */

/** One notification as it leaves: what happened, for whom, and where to look. */
export interface OutgoingNotification {
  /** The delivery's id: the receiver's key for dropping a repeat (`webhook-id`, `Message-ID`). */
  deliveryId: string;
  kind: NotificationKind;
  userId: string;
  summary: string;
  /** Where the web client shows it (the conversation or the inbox). */
  link: string;
  refs: NotificationRefs;
  createdAt: Date;
}

/** Where one delivery goes, per channel; `secret` never leaves the scheduler but to sign. */
export type DeliveryTarget =
  | { channel: 'webhook'; webhookId: string; url: string; secret: string }
  | { channel: 'email'; address: string }
  | { channel: 'push'; subscriptionId: string; endpoint: string; p256dh: string; auth: string };

export interface NotificationChannel<C extends NotificationChannelName = NotificationChannelName> {
  readonly name: C;
  /** Whether the operator configured this channel (e-mail without SMTP is off). */
  readonly enabled: boolean;
  attempt(
    notification: OutgoingNotification,
    target: Extract<DeliveryTarget, { channel: C }>,
    signal: AbortSignal,
  ): Promise<AttemptResult>;
}

/** An error's message and its causes', for the delivery log (bounded; never a header or a body). */
export function describeError(e: unknown): string {
  const parts: string[] = [];
  let cur: unknown = e;
  for (let depth = 0; depth < 4 && cur; depth++) {
    parts.push(cur instanceof Error ? cur.message : typeof cur === 'string' ? cur : inspect(cur, { depth: 1 }));
    cur = cur instanceof Error ? cur.cause : undefined;
  }
  return parts.join(': ').slice(0, 500);
}

/**
 * How a failed connection or address check ends an attempt: a private address the guard refused
 * (itself or among the error's causes) for good, anything else for a retry.
 */
export function failedAttempt(e: unknown, context?: string): AttemptResult {
  let cur: unknown = e;
  for (let depth = 0; depth < 4 && cur; depth++) {
    if (cur instanceof BlockedAddressError) return { kind: 'permanent', error: cur.message };
    cur = cur instanceof Error ? cur.cause : undefined;
  }
  return { kind: 'transient', error: context ? `${context}: ${describeError(e)}` : describeError(e) };
}

/**
 * One POST through the guarded fetch within the attempt's time: the receiver's status (its body
 * never read), or the failed attempt.
 */
export async function postOnce(
  guardedFetch: typeof fetch,
  url: string,
  init: { headers: Record<string, string>; body: string | Buffer | undefined },
  signal: AbortSignal,
  timeoutMs: number,
): Promise<{ status: number } | AttemptResult> {
  try {
    const res = await guardedFetch(url, {
      method: 'POST',
      headers: init.headers,
      body: init.body,
      signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
    });
    await res.body?.cancel().catch(() => undefined);
    return { status: res.status };
  } catch (e) {
    return failedAttempt(e);
  }
}
