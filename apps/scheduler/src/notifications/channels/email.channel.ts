import escapeHtml from 'escape-html';
import { createTransport, type Transporter } from 'nodemailer';
import type { NotificationKind } from '@skald/contracts';
import type { AttemptResult } from '../delivery-rules';
import { describeError, DeliveryTarget, NotificationChannel, OutgoingNotification } from './notification-channel';

export interface EmailChannelOptions {
  /** `smtp://user:pass@host:587` or `smtps://…`; unset: the channel is off. */
  smtpUrl: string | undefined;
  from: string;
  /** A server that has not answered in this long has failed this attempt. */
  timeoutMs: number;
}

const SUBJECT_PREFIX: Record<NotificationKind, string> = {
  approval_requested: 'Approval needed',
  question_asked: 'A question for you',
  job_needs_human: 'A job needs you',
  job_finished: 'Job finished',
  turn_finished: 'Reply ready',
};

/** The mail for a notification: a subject, a plain-text body and a simple HTML one, each with the link. */
export function composeEmail(n: OutgoingNotification): { subject: string; text: string; html: string } {
  const oneLine = n.summary.replace(/[\r\n]+/g, ' ').slice(0, 150);
  const subject = `[Skald] ${SUBJECT_PREFIX[n.kind]}: ${oneLine}`;
  const text = `${n.summary}\n\nOpen Skald: ${n.link}\n\nYou get this mail because of your Skald notification settings.\n`;
  const html =
    `<!doctype html><html><body>` +
    `<p>${escapeHtml(n.summary)}</p>` +
    `<p><a href="${escapeHtml(n.link)}">Open Skald</a></p>` +
    `<p style="color:#666;font-size:small">You get this mail because of your Skald notification settings.</p>` +
    `</body></html>`;
  return { subject, text, html };
}

/**
 * E-mail over SMTP (nodemailer), to the account's address. A mail carries the summary and a link,
 * never a credential: whoever follows the link signs in as usual.
 */
export class EmailChannel implements NotificationChannel<'email'> {
  readonly name = 'email' as const;
  readonly enabled: boolean;
  private readonly transport: Transporter | undefined;

  constructor(private readonly options: EmailChannelOptions) {
    this.enabled = options.smtpUrl !== undefined;
    this.transport = options.smtpUrl
      ? createTransport({
          url: options.smtpUrl,
          connectionTimeout: options.timeoutMs,
          greetingTimeout: options.timeoutMs,
          socketTimeout: options.timeoutMs,
        })
      : undefined;
  }

  async attempt(
    n: OutgoingNotification,
    target: Extract<DeliveryTarget, { channel: 'email' }>,
    signal: AbortSignal,
  ): Promise<AttemptResult> {
    if (!this.transport) return { kind: 'permanent', error: 'e-mail is not configured (SKALD_SMTP_URL)' };
    if (signal.aborted) return { kind: 'transient', error: 'cancelled' };
    const mail = composeEmail(n);
    try {
      await this.transport.sendMail({
        from: this.options.from,
        to: target.address,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        messageId: `<${n.deliveryId}@skald.notifications>`,
      });
      return { kind: 'delivered' };
    } catch (e) {
      const code = (e as { responseCode?: unknown }).responseCode;
      const responseCode = typeof code === 'number' ? code : undefined;
      // 5xx: the server refuses this mail for good (no such mailbox, policy); 4xx and I/O errors pass.
      if (responseCode !== undefined && responseCode >= 500)
        return { kind: 'permanent', error: describeError(e), responseCode };
      return { kind: 'transient', error: describeError(e), responseCode };
    }
  }

  close(): void {
    this.transport?.close();
  }
}
