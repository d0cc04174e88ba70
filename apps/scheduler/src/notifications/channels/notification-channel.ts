import { inspect } from 'node:util';
import type { NotificationChannelName, NotificationKind, NotificationRefs } from '@skald/contracts';
import type { AttemptResult } from '../delivery-rules';

/**
 * The seam every channel plugs into: a channel is how one notification reaches one target (a
 * webhook URL, an e-mail address; a push subscription next). The pipeline owns the rows, the
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
  { channel: 'webhook'; webhookId: string; url: string; secret: string } | { channel: 'email'; address: string };

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
