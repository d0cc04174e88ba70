import { z } from 'zod';
import { DEFAULT_REDIS_PREFIXES, USER_PAGE_MAX, userCapSetting } from '@skald/contracts';
import { BaseConfigSchema, commaList } from '@skald/service-kit/config';
import { validateCron } from './jobs/cron-spec';
import { isVapidPrivateKey } from './notifications/vapid';

function validCron(expr: string): boolean {
  try {
    validateCron(expr, 'UTC', 60);
    return true;
  } catch {
    return false;
  }
}

export const SchedulerConfigSchema = BaseConfigSchema.extend({
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3104),
  HOST: z.string().default('127.0.0.1'),
  /** BullMQ key prefix: one per deployment (tests use one per run so they never collide). */
  SKALD_BULL_PREFIX: z.string().min(1).default(DEFAULT_REDIS_PREFIXES.bullPrefix),
  /** Minimum seconds between two fires of a cron job. */
  SKALD_CRON_MIN_INTERVAL_S: z.coerce.number().int().min(1).default(60),
  /** Async tasks a user may have open at once; one more is refused with a clear error. */
  SKALD_MAX_ASYNC_TASKS_PER_USER: z.coerce.number().int().min(1).default(5),
  SKALD_MAX_CRON_JOBS_PER_USER: userCapSetting('cron_jobs'),
  /** How often open runs are checked (the `turn_ended` doorbell makes it sooner). */
  SKALD_JOB_POLL_MS: z.coerce.number().int().min(50).default(1_000),
  /** A run whose runner has not heartbeaten for this long is adopted by another replica. */
  SKALD_JOB_STALE_MS: z.coerce.number().int().min(500).default(15_000),
  /** How often BullMQ's schedulers are reconciled from the table (also on every Redis reconnect). */
  SKALD_JOB_RECONCILE_MS: z.coerce.number().int().min(200).default(15_000),
  /**
   * The periodic system tick of every user (each gets a tic job from the scheduler's tic
   * reconciliation, or their first `POST /api/tic/trigger`): a cron expression in UTC, or `off`.
   */
  SKALD_TIC_CRON: z
    .string()
    .default('0 * * * *')
    .refine((v) => v === 'off' || validCron(v), 'a cron expression (five fields, or six with seconds first) or `off`'),
  /**
   * Users one pass of the tic reconciliation gives a tic job (a pass every
   * `SKALD_JOB_RECONCILE_MS`, walking the users in id order): a new user ticks within
   * ceil(users / this) passes.
   */
  SKALD_TIC_USERS_PER_PASS: z.coerce.number().int().min(1).max(USER_PAGE_MAX).default(200),
  /** Fires this replica's BullMQ worker handles at once (each only starts a session and waits). */
  SKALD_JOB_CONCURRENCY: z.coerce.number().int().min(1).default(8),
  /** The web client's public base URL, for the links in notifications (webhook bodies, e-mails). */
  SKALD_PUBLIC_URL: z.string().url().default('http://127.0.0.1:8080'),
  /**
   * SMTP server for e-mail notifications, e.g. smtps://user:password@mail.example.com:465 (STARTTLS on
   * smtp://…:587); unset: e-mail notifications are off. Never logged.
   */
  SKALD_SMTP_URL: z.string().url().optional(),
  /** The From of notification e-mails. */
  SKALD_SMTP_FROM: z.string().min(3).default('Skald <skald@localhost>'),
  /**
   * Key sealing webhook signing secrets at rest (AES-256-GCM; the tool runner's, which seals MCP
   * credentials with it): 32 bytes as 64 hex digits or base64. Without it no webhook can be added.
   */
  SKALD_SECRETS_KEY: z.string().optional(),
  /** Host names, addresses and CIDR ranges webhooks may post to although private (comma-separated). */
  SKALD_WEBHOOK_ALLOW_HOSTS: commaList(),
  /** A webhook receiver or SMTP server that has not answered in this long fails the attempt. */
  SKALD_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  /** A webhook whose deliveries failed this many times in a row is disabled, and its owner told. */
  SKALD_WEBHOOK_DISABLE_AFTER: z.coerce.number().int().min(1).max(1_000).default(5),
  /** Attempts of one notification delivery in all, the first included. */
  SKALD_NOTIFY_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(8),
  /** Delay before a delivery's second attempt; each further one doubles it, up to SKALD_NOTIFY_RETRY_MAX_MS. */
  SKALD_NOTIFY_RETRY_BASE_MS: z.coerce.number().int().min(10).default(10_000),
  /** The longest delay between two attempts of a delivery. */
  SKALD_NOTIFY_RETRY_MAX_MS: z.coerce.number().int().min(10).default(3_600_000),
  /**
   * The VAPID private key that signs every Web Push request (base64url of the 32-byte P-256
   * scalar; the public key is derived from it and served to browsers). Generated once, like the
   * other secrets (`npm start` keeps it in `.skald/vapid-private-key`); changing it ends every
   * browser's subscription. Unset: push is off. Never logged.
   */
  SKALD_VAPID_PRIVATE_KEY: z
    .string()
    .optional()
    .refine((v) => v === undefined || isVapidPrivateKey(v), 'base64url of a 32-byte P-256 private key'),
  /** Who the push services may contact about this sender (VAPID `sub`): a `mailto:` or `https:` URL. */
  SKALD_VAPID_SUBJECT: z
    .string()
    .regex(/^(mailto:|https:\/\/)\S+$/, 'a mailto: or https: URL')
    .default('mailto:admin@skald.local'),
  /** How long a push service keeps a push for a device that is offline (its TTL), in seconds. */
  SKALD_PUSH_TTL_S: z.coerce.number().int().min(0).max(2_419_200).default(3_600),
  /** How often pending deliveries whose job was lost are looked for and enqueued again. */
  SKALD_NOTIFY_SWEEP_MS: z.coerce.number().int().min(100).default(30_000),
});
export type SchedulerConfig = z.infer<typeof SchedulerConfigSchema>;
