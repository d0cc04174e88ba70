import { z } from 'zod';
import { DEFAULT_REDIS_PREFIXES, USER_PAGE_MAX, userCapSetting } from '@skald/contracts';
import { BaseConfigSchema } from '@skald/service-kit/config';
import { validateCron } from './jobs/cron-spec';

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
});
export type SchedulerConfig = z.infer<typeof SchedulerConfigSchema>;
