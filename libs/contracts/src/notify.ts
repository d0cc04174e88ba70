import { z } from 'zod';
import { Actor, Id } from './common';

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

// ---------------------------------------------------------------- REST: settings, webhooks, the delivery log

/** An http(s) URL a webhook posts to (its address is checked again at every delivery). */
export const WebhookUrl = z
  .string()
  .max(2048)
  .url()
  .refine((u) => /^https?:\/\//i.test(u), 'an http or https URL');

/**
 * `POST /api/notifications/webhooks`: `scope` `admin` (admins only) receives every user's
 * events, or only `kinds`; `user` (the default) the caller's own, as their settings route them.
 */
export const WebhookInput = z
  .object({
    url: WebhookUrl,
    scope: z.enum(['user', 'admin']).default('user'),
    kinds: z.array(NotificationKind).min(1).max(NOTIFICATION_KINDS.length).optional(),
  })
  .strict();
export type WebhookInput = z.infer<typeof WebhookInput>;

/** A webhook as its owner sees it: never its secret. */
export const WebhookDto = z.object({
  id: z.string(),
  url: z.string(),
  scope: z.enum(['user', 'admin']),
  kinds: z.array(NotificationKind).nullable(),
  enabled: z.boolean(),
  consecutive_failures: z.number().int(),
  disabled_reason: z.string().nullable(),
  created_at: z.string(),
});
export type WebhookDto = z.infer<typeof WebhookDto>;
export const WebhookList = z.object({ items: z.array(WebhookDto) });
/** The answer to a create: the only time the secret is shown. */
export const WebhookCreated = z.object({ webhook: WebhookDto, secret: z.string() });
export type WebhookCreated = z.infer<typeof WebhookCreated>;

/** One delivery of a webhook, as its log shows it. */
export const DeliveryDto = z.object({
  id: z.string(),
  notification_id: z.string(),
  kind: NotificationKind,
  user_id: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  next_attempt_at: z.string().nullable(),
  last_error: z.string().nullable(),
  response_code: z.number().int().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type DeliveryDto = z.infer<typeof DeliveryDto>;
export const DeliveryList = z.object({ items: z.array(DeliveryDto) });

// ---------------------------------------------------------------- NATS (scheduler)

/**
 * `notify.event` (queue `scheduler`): an event that may notify its user, sent by the service that
 * committed it, right after the commit, keyed by `event_key` (the event's own id: a redelivery,
 * or a re-ask after a restart, writes nothing new).
 */
export const NotifyEventRequest = z
  .object({
    user_id: z.string().uuid(),
    event_key: z.string().min(1).max(200),
    kind: NotificationKind,
    summary: z.string().min(1).max(1_000),
    refs: NotificationRefs,
  })
  .strict();
export const NotifyEventReply = z.object({ notification_id: z.string(), duplicate: z.boolean() });

export const NotificationSettingsRequest = z.object({ actor: Actor });
export const NotificationSettingsPutRequest = z.object({ actor: Actor, settings: NotificationSettings });
export const WebhooksListRequest = z.object({ actor: Actor });
export const WebhookCreateRequest = z.object({ actor: Actor, webhook: WebhookInput });
export const WebhookRequest = z.object({ actor: Actor, webhook_id: Id });
export const WebhookDeleted = z.object({ deleted: z.literal(true) });
