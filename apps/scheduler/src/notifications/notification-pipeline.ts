import { Job, Queue, Worker } from 'bullmq';
import type Redis from 'ioredis';
import {
  failedInARow,
  notificationLine,
  NOTIFICATION_SUMMARY_MAX,
  NOTIFY_QUEUE,
  type NotificationKind,
} from '@skald/contracts';
import type { Logger } from '@skald/service-kit';
import type { JobOwnersPort, PresencePort } from '../jobs/job-ports';
import {
  dependsOnPresence,
  nextStep,
  recordsEvent,
  type AttemptResult,
  type Presence,
  type RetryPolicy,
} from './delivery-rules';
import type { EmailChannel } from './channels/email.channel';
import type { OutgoingNotification } from './channels/notification-channel';
import type { PushChannel } from './channels/push.channel';
import type { WebhookChannel } from './channels/webhook.channel';
import { ClaimedDelivery, NotificationsRepository } from './notifications.repository';
import { WebhookSecretUnavailable, type WebhookSecrets } from './webhook-secrets';

export interface PipelineOptions {
  prefix: string;
  retry: RetryPolicy;
  /** A webhook whose deliveries failed this many times in a row is disabled. */
  disableAfter: number;
  /** How often overdue pending deliveries are looked for (a lost job only delays a delivery). */
  sweepMs: number;
  /** Deliveries one sweep re-enqueues at most. */
  sweepBatch: number;
  concurrency: number;
  /** The web client's base URL, for links. */
  publicUrl: string;
  /** How long one attempt may hold its delivery (longer than a channel's timeout). */
  attemptLeaseMs: number;
}

/** Where the owner of a webhook that was switched off is told (a `notification` user event to their home source). */
export interface OwnerNoticePort {
  notice(userId: string, summary: string): Promise<void>;
}

interface DeliverData {
  deliveryId: string;
  attempts: number;
}

/** The page of the web client a notification of `kind` opens. */
export function linkFor(publicUrl: string, kind: NotificationKind): string {
  const base = publicUrl.replace(/\/+$/, '');
  switch (kind) {
    case 'approval_requested':
    case 'question_asked':
    case 'job_needs_human':
      return `${base}/#inbox`;
    case 'job_finished':
      return `${base}/#cron`;
    case 'turn_finished':
      return `${base}/#chat`;
  }
}

/**
 * The notification pipeline: events become rows (one transaction per event, idempotent on its
 * key), rows become BullMQ jobs (one per attempt, id = delivery and attempt, so a job added twice
 * is held once), a job makes one fenced attempt through its channel and records the outcome. The
 * table is the truth: a sweep re-enqueues pending deliveries whose job was lost (a Redis flush, a
 * crash between commit and enqueue), so delivery survives a restart of any process.
 */
export class NotificationPipeline {
  private queue: Queue | null = null;
  private worker: Worker | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweeping = false;

  constructor(
    private readonly repo: NotificationsRepository,
    private readonly channels: { webhook: WebhookChannel; email: EmailChannel; push: PushChannel },
    private readonly owners: JobOwnersPort & PresencePort,
    private readonly notices: OwnerNoticePort,
    private readonly secrets: WebhookSecrets,
    private readonly connect: () => Redis,
    private readonly opts: PipelineOptions,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    // Secrets written in clear before they were sealed are sealed before any delivery is attempted.
    const sealed = await this.secrets.sealClear(this.repo);
    if (sealed > 0) this.log.info({ sealed }, 'sealed webhook secrets that were stored in clear');
    this.queue = new Queue(NOTIFY_QUEUE, { connection: this.connect(), prefix: this.opts.prefix });
    this.queue.on('error', (e) => this.log.warn({ err: String(e) }, 'notification queue error'));
    this.worker = new Worker(NOTIFY_QUEUE, (job: Job<DeliverData>) => this.process(job.data), {
      connection: this.connect(),
      prefix: this.opts.prefix,
      concurrency: this.opts.concurrency,
      // The claim is fenced in Postgres: a stalled job run twice makes one attempt.
      maxStalledCount: 1_000,
    });
    this.worker.on('error', (e) => this.log.warn({ err: String(e) }, 'notification worker error'));
    await this.queue.waitUntilReady();
    this.sweepTimer = setInterval(() => void this.sweep(), this.opts.sweepMs);
    this.sweepTimer.unref();
    void this.sweep();
  }

  /** Drains the worker (the attempt in flight ends and is recorded), then closes the queue. */
  async stop(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await this.worker?.close();
    await this.queue?.close();
    this.channels.email.close();
  }

  /**
   * `notify.event`: the rows first, then the jobs. An event whose kind depends on the user's
   * presence (`turn_finished`) is written only when no socket of theirs is open at this moment.
   */
  async ingest(e: {
    userId: string;
    eventKey: string;
    kind: NotificationKind;
    summary: string;
    refs: OutgoingNotification['refs'];
  }): Promise<{ notification_id: string | null; duplicate: boolean; skipped?: 'user_online' }> {
    if (dependsOnPresence(e.kind) && !recordsEvent(e.kind, await this.presence(e.userId)))
      return { notification_id: null, duplicate: false, skipped: 'user_online' };
    const r = await this.repo.record({
      ...e,
      // the one wall every summary passes (a job's result text among them): stored, mailed, pushed
      summary: notificationLine(e.summary, NOTIFICATION_SUMMARY_MAX),
      emailEnabled: this.channels.email.enabled,
      pushEnabled: this.channels.push.enabled,
      now: new Date(),
    });
    for (const d of r.due) await this.enqueue(d.id, d.attempts, d.next_attempt_at);
    return { notification_id: r.notificationId, duplicate: r.duplicate };
  }

  private async presence(userId: string): Promise<Presence> {
    try {
      return (await this.owners.online(userId)) ? 'online' : 'away';
    } catch (err) {
      this.log.warn({ userId, err: String(err) }, 'presence unknown; the user counts as away');
      return 'unknown';
    }
  }

  /** One pass of the sweep: overdue pending deliveries get their job again (bounded per pass). */
  async sweep(): Promise<number> {
    if (this.sweeping || !this.queue) return 0;
    this.sweeping = true;
    try {
      const overdue = await this.repo.overdue(this.opts.sweepMs, this.opts.sweepBatch);
      for (const d of overdue) await this.enqueue(d.id, d.attempts, new Date());
      return overdue.length;
    } catch (e) {
      this.log.warn({ err: String(e) }, 'notification sweep failed');
      return 0;
    } finally {
      this.sweeping = false;
    }
  }

  private async enqueue(deliveryId: string, attempts: number, at: Date): Promise<void> {
    if (!this.queue) return;
    await this.queue.add(
      'deliver',
      { deliveryId, attempts },
      {
        jobId: `${deliveryId}-${attempts}`,
        delay: Math.max(0, at.getTime() - Date.now()),
        removeOnComplete: true,
        removeOnFail: true,
      },
    );
  }

  /** One job: claim, attempt, record. Never throws for the target's failure (the table says it). */
  async process(data: DeliverData): Promise<void> {
    const claimed = await this.repo.claim(data.deliveryId, data.attempts, this.opts.attemptLeaseMs);
    if (!claimed) return;
    const attempt = claimed.delivery.attempts;
    const result = await this.attempt(claimed);
    const step =
      attempt > this.opts.retry.maxAttempts
        ? ({ kind: 'failed', error: 'no attempt left' } as const)
        : nextStep(attempt, result, this.opts.retry);
    const webhookCounts = claimed.webhook?.enabled ? claimed.delivery.webhook_id : null;
    const outcome =
      step.kind === 'retry'
        ? {
            kind: 'retry' as const,
            at: new Date(Date.now() + step.delayMs),
            error: result.kind === 'delivered' ? '' : result.error,
          }
        : step;
    const { disabled } = await this.repo.finish({
      deliveryId: claimed.delivery.id,
      webhookId: webhookCounts,
      outcome,
      responseCode: result.responseCode ?? null,
      disableAfter: this.opts.disableAfter,
    });
    this.log.info(
      {
        deliveryId: claimed.delivery.id,
        channel: claimed.delivery.channel,
        attempt,
        outcome: outcome.kind,
        responseCode: result.responseCode,
        ...(result.kind === 'delivered' ? {} : { error: result.error }),
      },
      'notification delivery attempt',
    );
    if (outcome.kind === 'retry') await this.enqueue(claimed.delivery.id, attempt, outcome.at);
    await this.afterPush(claimed, result);
    if (disabled)
      await this.notices
        .notice(
          disabled.owner_id,
          `Your webhook ${disabled.url} was disabled after ${failedInARow(disabled.consecutive_failures)}. Add it again once its receiver works.`,
        )
        .catch((e: unknown) => this.log.warn({ err: String(e), webhookId: disabled.id }, 'webhook notice failed'));
  }

  /** A push subscription records its last success, and goes when the push service says it is gone. */
  private async afterPush(c: ClaimedDelivery, result: AttemptResult): Promise<void> {
    const sub = c.pushSubscription;
    if (c.delivery.channel !== 'push' || !sub) return;
    try {
      if (result.kind === 'delivered') await this.repo.pushDelivered(sub.id);
      else if (result.kind === 'permanent' && result.targetGone) {
        await this.repo.dropGonePushSubscription(sub.id);
        this.log.info({ userId: sub.user_id, subscriptionId: sub.id }, 'push subscription gone: removed');
      }
    } catch (e) {
      this.log.warn({ err: String(e), subscriptionId: sub.id }, 'push subscription bookkeeping failed');
    }
  }

  private async attempt(c: ClaimedDelivery): Promise<AttemptResult> {
    const n: OutgoingNotification = {
      deliveryId: c.delivery.id,
      kind: c.notification.kind as NotificationKind,
      userId: c.notification.user_id,
      summary: c.notification.summary,
      link: linkFor(this.opts.publicUrl, c.notification.kind as NotificationKind),
      refs: c.notification.refs as OutgoingNotification['refs'],
      createdAt: c.notification.created_at,
    };
    const signal = new AbortController().signal;
    switch (c.delivery.channel) {
      case 'webhook': {
        if (!c.webhook || !c.webhook.enabled) return { kind: 'permanent', error: 'the webhook is disabled or gone' };
        let secret: string;
        try {
          secret = this.secrets.open(c.webhook);
        } catch (e) {
          if (e instanceof WebhookSecretUnavailable) return { kind: 'permanent', error: e.message };
          throw e;
        }
        return this.channels.webhook.attempt(
          n,
          { channel: 'webhook', webhookId: c.webhook.id, url: c.webhook.url, secret },
          signal,
        );
      }
      case 'email': {
        let standing;
        try {
          standing = await this.owners.standing(c.notification.user_id);
        } catch (e) {
          return { kind: 'transient', error: `the account could not be looked up: ${String(e)}` };
        }
        if (standing.standing !== 'active' || !standing.email)
          return { kind: 'permanent', error: `the account is ${standing.standing}` };
        return this.channels.email.attempt(n, { channel: 'email', address: standing.email }, signal);
      }
      case 'push': {
        const sub = c.pushSubscription;
        if (!sub || sub.user_id !== c.notification.user_id)
          return { kind: 'permanent', error: 'the push subscription is gone' };
        return this.channels.push.attempt(
          n,
          { channel: 'push', subscriptionId: sub.id, endpoint: sub.endpoint, p256dh: sub.p256dh, auth: sub.auth },
          signal,
        );
      }
    }
  }
}
