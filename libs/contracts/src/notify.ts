import { z } from 'zod';

/**
 * Durable notifications: what a user is told away from the chat (a webhook, an e-mail; Web Push
 * is the next channel) and the body a webhook receiver gets. A notification is one event for one
 * recipient; a delivery is that notification on one channel target.
 */

/** What happened that a human may want to know about. */
export const NOTIFICATION_KINDS = [
  /** A tool call waits for a human's approval. */
  'approval_requested',
  /** The agent asked the user a question (`ask_user_clarification`). */
  'question_asked',
  /** A cron or async job waits for a human. */
  'job_needs_human',
  /** A cron or async job ended (succeeded, failed or cancelled). */
  'job_finished',
  /** A turn finished while the user had no socket open. */
  'turn_finished',
] as const;
export const NotificationKind = z.enum(NOTIFICATION_KINDS);
export type NotificationKind = z.infer<typeof NotificationKind>;

/** How one notification reaches one target. Push joins this list as a third channel. */
export const NOTIFICATION_CHANNELS = ['webhook', 'email'] as const;
export const NotificationChannelName = z.enum(NOTIFICATION_CHANNELS);
export type NotificationChannelName = z.infer<typeof NotificationChannelName>;

/** `HH:MM`, 24-hour clock. */
const ClockTime = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'HH:MM on a 24-hour clock');

/** An IANA time zone the runtime knows (`Europe/Berlin`, `UTC`). */
export const TimeZoneName = z
  .string()
  .min(1)
  .max(64)
  .refine((tz) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  }, 'an IANA time zone name such as Europe/Berlin');

/**
 * Quiet hours: from `start` to `end` local time in `time_zone` (crossing midnight when `end` is
 * earlier than `start`; equal times mean no quiet hours). Notifications for people (e-mail, push)
 * wait until the quiet hours end; webhooks, read by machines, are not held.
 */
export const QuietHours = z.object({ start: ClockTime, end: ClockTime, time_zone: TimeZoneName }).strict();
export type QuietHours = z.infer<typeof QuietHours>;

/** A user's notification settings: which kinds go to which channel, and quiet hours. */
export const NotificationSettings = z
  .object({
    channels: z
      .object({
        webhook: z.array(NotificationKind).max(NOTIFICATION_KINDS.length),
        email: z.array(NotificationKind).max(NOTIFICATION_KINDS.length),
      })
      .strict(),
    quiet_hours: QuietHours.nullable(),
  })
  .strict();
export type NotificationSettings = z.infer<typeof NotificationSettings>;

/** Until a user says otherwise: everything to their webhooks; e-mail for what waits for them. */
export const DEFAULT_NOTIFICATION_SETTINGS: NotificationSettings = {
  channels: {
    webhook: [...NOTIFICATION_KINDS],
    email: ['approval_requested', 'question_asked', 'job_needs_human'],
  },
  quiet_hours: null,
};

/** What a notification points at; every field optional, none of them a credential. */
export const NotificationRefs = z
  .object({
    session_id: z.string().max(64).optional(),
    tool_call_id: z.string().max(128).optional(),
    request_id: z.string().max(128).optional(),
    tool_name: z.string().max(128).optional(),
    job_id: z.string().max(64).optional(),
    run_id: z.string().max(64).optional(),
  })
  .strict();
export type NotificationRefs = z.infer<typeof NotificationRefs>;

/**
 * The JSON body a webhook receives (version 1), signed as `docs/notifications.md` describes:
 * `id` is the delivery's id and equals the `webhook-id` header, so a receiver can drop a repeat.
 */
export const WebhookEventBody = z
  .object({
    version: z.literal(1),
    id: z.string(),
    kind: NotificationKind,
    created_at: z.string(),
    user_id: z.string(),
    summary: z.string(),
    /** The page in the web client to open (the conversation or the inbox), absolute when the deployment's URL is known. */
    link: z.string(),
    refs: NotificationRefs,
  })
  .strict();
export type WebhookEventBody = z.infer<typeof WebhookEventBody>;
