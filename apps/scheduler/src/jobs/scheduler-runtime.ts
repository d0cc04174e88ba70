import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { Bus } from '@skald/messaging/bus-port';
import { METRICS_REGISTRY } from '@skald/service-kit/ops';
import type { Logger } from '@skald/service-kit';
import { Registry } from 'prom-client';
import type { SchedulerConfig } from '../config';
import { assertNoEviction, RedisConnection } from '../redis.provider';
import { JobEngine, QUEUE_NAME } from './job-engine';
import { registerJobHandlers } from './jobs.handler';
import { JobsRepository } from './jobs.repository';
import { JobsService } from './jobs.service';
import { NatsHomeSource, NatsJobEvents, NatsJobOwners, NatsJobSessions } from './nats-job-ports';
import { SchedulerMetrics } from './scheduler-metrics';
import { AddressPolicy, SecretBox } from '@skald/service-kit';
import { topicOf } from '@skald/contracts';
import { EmailChannel } from '../notifications/channels/email.channel';
import { PushChannel } from '../notifications/channels/push.channel';
import { NatsActionTokens } from '../notifications/nats-action-tokens';
import { vapidKeysOf } from '../notifications/vapid';
import { WebhookChannel } from '../notifications/channels/webhook.channel';
import { NotificationPipeline } from '../notifications/notification-pipeline';
import { registerNotificationHandlers } from '../notifications/notifications.handler';
import { NotificationsRepository } from '../notifications/notifications.repository';
import { NotificationsService } from '../notifications/notifications.service';
import { WebhookSecrets } from '../notifications/webhook-secrets';

export const SCHEDULER_CONFIG = Symbol('SCHEDULER_CONFIG');
export const SCHEDULER_LOGGER = Symbol('SCHEDULER_LOGGER');
export const SCHEDULER_INSTANCE = Symbol('SCHEDULER_INSTANCE');

/**
 * Wires the scheduler: refuses a Redis that may evict, starts the engine (mirror, runner,
 * watcher) and the NATS handlers; on shutdown closes BullMQ's worker first (drain, then close).
 */
@Injectable()
export class SchedulerRuntime implements OnApplicationBootstrap, OnApplicationShutdown {
  engine!: JobEngine;
  notifications!: NotificationPipeline;
  private ticTimer: NodeJS.Timeout | null = null;
  private ticPassRunning = false;

  constructor(
    private readonly ds: Database,
    private readonly bus: Bus,
    private readonly redis: RedisConnection,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    @Inject(SCHEDULER_LOGGER) private readonly log: Logger,
    @Inject(SCHEDULER_INSTANCE) private readonly instance: string,
    @Inject(METRICS_REGISTRY) private readonly registry: Registry,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await assertNoEviction(this.redis.client);
    const repo = new JobsRepository(this.ds);
    const sessions = new NatsJobSessions(this.bus);
    const owners = new NatsJobOwners(this.bus);
    const home = new NatsHomeSource(this.bus);
    await this.startNotifications(owners, home);
    const notifications = this.notifications;
    this.engine = new JobEngine(
      repo,
      sessions,
      new NatsJobEvents(this.bus),
      home,
      () => this.redis.bullConnection(),
      {
        prefix: this.config.SKALD_BULL_PREFIX,
        runner: this.instance,
        pollMs: this.config.SKALD_JOB_POLL_MS,
        staleMs: this.config.SKALD_JOB_STALE_MS,
        reconcileMs: this.config.SKALD_JOB_RECONCILE_MS,
        concurrency: this.config.SKALD_JOB_CONCURRENCY,
      },
      this.log,
      owners,
      { jobFinished: (e) => notifications.ingest({ ...e, kind: 'job_finished' }) },
    );
    const service = new JobsService(repo, this.engine, sessions, {
      minIntervalS: this.config.SKALD_CRON_MIN_INTERVAL_S,
      maxAsyncPerUser: this.config.SKALD_MAX_ASYNC_TASKS_PER_USER,
      maxCronPerUser: this.config.SKALD_MAX_CRON_JOBS_PER_USER,
      ticCron: this.config.SKALD_TIC_CRON === 'off' ? null : this.config.SKALD_TIC_CRON,
    });
    await service.applyTicSchedule();
    registerJobHandlers(this.bus, service, this.engine);
    const engine = this.engine;
    new SchedulerMetrics(this.registry).observeQueue(QUEUE_NAME, () => engine.jobCounts());
    // Every user gets their periodic tick: one bounded pass now, then one per reconcile interval
    // (the mirror picks the new jobs up at its next reconcile). Not awaited: a gateway that is away
    // does not hold up the start; a failed pass is retried by the next.
    void this.ticPass(service, owners);
    this.ticTimer = setInterval(() => void this.ticPass(service, owners), this.config.SKALD_JOB_RECONCILE_MS);
    this.ticTimer.unref();
    await this.engine.start();
  }

  /** The notification pipeline (webhooks, e-mail, push) and its REST handlers. */
  private async startNotifications(owners: NatsJobOwners, home: NatsHomeSource): Promise<void> {
    const c = this.config;
    const policy = new AddressPolicy(c.SKALD_WEBHOOK_ALLOW_HOSTS, 'SKALD_WEBHOOK_ALLOW_HOSTS');
    const repo = new NotificationsRepository(this.ds);
    const vapid = c.SKALD_VAPID_PRIVATE_KEY ? vapidKeysOf(c.SKALD_VAPID_PRIVATE_KEY) : null;
    const secrets = new WebhookSecrets(SecretBox.fromConfig(c.SKALD_SECRETS_KEY));
    if (!secrets.configured) this.log.warn('SKALD_SECRETS_KEY is not set: webhooks cannot be added');
    this.notifications = new NotificationPipeline(
      repo,
      {
        webhook: new WebhookChannel({ policy, timeoutMs: c.SKALD_WEBHOOK_TIMEOUT_MS, now: () => new Date() }),
        email: new EmailChannel({
          smtpUrl: c.SKALD_SMTP_URL,
          from: c.SKALD_SMTP_FROM,
          timeoutMs: c.SKALD_WEBHOOK_TIMEOUT_MS,
        }),
        push: new PushChannel({
          vapid,
          subject: c.SKALD_VAPID_SUBJECT,
          ttlS: c.SKALD_PUSH_TTL_S,
          policy,
          timeoutMs: c.SKALD_WEBHOOK_TIMEOUT_MS,
          tokens: new NatsActionTokens(this.bus),
        }),
      },
      owners,
      {
        notice: async (userId, summary) =>
          this.bus.publish(topicOf('userEvents', userId), {
            type: 'notification',
            summary,
            refs: {},
            source: await home.homeSource(userId),
          }),
      },
      secrets,
      () => this.redis.bullConnection(),
      {
        prefix: c.SKALD_BULL_PREFIX,
        retry: {
          maxAttempts: c.SKALD_NOTIFY_MAX_ATTEMPTS,
          baseDelayMs: c.SKALD_NOTIFY_RETRY_BASE_MS,
          maxDelayMs: c.SKALD_NOTIFY_RETRY_MAX_MS,
        },
        disableAfter: c.SKALD_WEBHOOK_DISABLE_AFTER,
        sweepMs: c.SKALD_NOTIFY_SWEEP_MS,
        sweepBatch: 200,
        concurrency: c.SKALD_JOB_CONCURRENCY,
        publicUrl: c.SKALD_PUBLIC_URL,
        attemptLeaseMs: c.SKALD_WEBHOOK_TIMEOUT_MS + 30_000,
      },
      this.log,
    );
    await this.notifications.start();
    registerNotificationHandlers(
      this.bus,
      new NotificationsService(repo, policy, secrets, vapid?.publicKey ?? null),
      this.notifications,
    );
  }

  /** One bounded pass of the tic reconciliation; a pass still running makes the next one a no-op. */
  private async ticPass(service: JobsService, owners: NatsJobOwners): Promise<void> {
    if (this.ticPassRunning) return;
    this.ticPassRunning = true;
    try {
      const created = await service.ensureTics(owners, this.config.SKALD_TIC_USERS_PER_PASS);
      if (created > 0) this.log.info({ created }, 'tic jobs created');
    } catch (e) {
      this.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'tic reconciliation pass failed');
    } finally {
      this.ticPassRunning = false;
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.ticTimer) clearInterval(this.ticTimer);
    await this.engine?.stop();
    await this.notifications?.stop();
  }
}
