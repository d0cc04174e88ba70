import { z } from 'zod';
import { Actor, Id, StoredText } from './common';
import { NOTIFICATION_CHANNELS, NOTIFICATION_KINDS, NOTIFICATION_SUMMARY_MAX } from './notify-kinds';

/**
 * Durable notifications: what a user is told away from the chat (a webhook, an e-mail, a Web Push
 * notification) and the body a webhook receiver gets. A notification is one event for one
 * recipient; a delivery is that notification on one channel target.
 */

export {
  failedInARow,
  notificationLine,
  NOTIFICATION_SUMMARY_MAX,
  NOTIFICATION_CHANNELS,
  NOTIFICATION_KINDS,
} from './notify-kinds';
export const NotificationKind = z.enum(NOTIFICATION_KINDS);
export type NotificationKind = z.infer<typeof NotificationKind>;

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

/** What a phone in a pocket is told until its user says otherwise: everything that waits for them or ended. */
const DEFAULT_PUSH_KINDS: NotificationKind[] = [...NOTIFICATION_KINDS];

/**
 * A user's notification settings: which kinds go to which channel, and quiet hours. Settings saved
 * before push existed read as the push defaults.
 */
export const NotificationSettings = z
  .object({
    channels: z
      .object({
        webhook: z.array(NotificationKind).max(NOTIFICATION_KINDS.length),
        email: z.array(NotificationKind).max(NOTIFICATION_KINDS.length),
        push: z
          .array(NotificationKind)
          .max(NOTIFICATION_KINDS.length)
          .default(() => [...DEFAULT_PUSH_KINDS]),
      })
      .strict(),
    quiet_hours: QuietHours.nullable(),
  })
  .strict();
export type NotificationSettings = z.infer<typeof NotificationSettings>;

/**
 * Until a user says otherwise: everything to their webhooks and to their devices' push
 * subscriptions; e-mail for what waits for them.
 */
export const DEFAULT_NOTIFICATION_SETTINGS: NotificationSettings = {
  channels: {
    webhook: [...NOTIFICATION_KINDS],
    email: ['approval_requested', 'question_asked', 'job_needs_human'],
    push: [...DEFAULT_PUSH_KINDS],
  },
  quiet_hours: null,
};

/** What a notification points at; every field optional, none of them a credential. */
export const NotificationRefs = z
  .object({
    session_id: StoredText(64).optional(),
    tool_call_id: StoredText(128).optional(),
    request_id: StoredText(128).optional(),
    tool_name: StoredText(128).optional(),
    job_id: StoredText(64).optional(),
    run_id: StoredText(64).optional(),
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

// ---------------------------------------------------------------- REST: Web Push subscriptions

/** A base64url string (padding optional) of `bytes` bytes exactly: a push subscription's keys. */
const base64urlBytes = (bytes: number, what: string) =>
  z
    .string()
    .max(200)
    .refine((v) => new RegExp(`^[A-Za-z0-9_-]{${Math.ceil((bytes * 4) / 3)}}=*$`).test(v) && v.length % 4 !== 1, {
      message: `${what}: base64url of ${bytes} bytes`,
    });

/**
 * `POST /api/notifications/push/subscriptions`: what the browser's `PushSubscription.toJSON()`
 * gives (`endpoint`, `keys.p256dh`, `keys.auth`; `expirationTime` is ignored), and a label for the
 * device. The endpoint must be https (an http or private address only when the operator
 * allow-lists it); it is checked again at every delivery.
 */
export const PushSubscriptionInput = z
  .object({
    endpoint: z
      .string()
      .max(2048)
      .url()
      .refine((u) => /^https?:\/\//i.test(u), 'an https URL'),
    expirationTime: z.number().nullable().optional(),
    keys: z
      .object({
        /** The browser's P-256 public key, uncompressed (65 bytes). */
        p256dh: base64urlBytes(65, 'keys.p256dh'),
        /** The authentication secret (16 bytes). */
        auth: base64urlBytes(16, 'keys.auth'),
      })
      .strict(),
    /** What the owner sees in the list of devices, e.g. `Firefox on Android`. */
    user_agent: StoredText(200).optional(),
  })
  .strict();
export type PushSubscriptionInput = z.infer<typeof PushSubscriptionInput>;

/** A push subscription as its owner sees it (never its keys). */
export const PushSubscriptionDto = z.object({
  id: z.string(),
  endpoint: z.string(),
  user_agent: z.string(),
  created_at: z.string(),
  last_success_at: z.string().nullable(),
});
export type PushSubscriptionDto = z.infer<typeof PushSubscriptionDto>;
export const PushSubscriptionList = z.object({ items: z.array(PushSubscriptionDto) });
/** The answer to a subscribe: `created` false when the endpoint was already the caller's (its keys are updated). */
export const PushSubscribed = z.object({ subscription: PushSubscriptionDto, created: z.boolean() });
export type PushSubscribed = z.infer<typeof PushSubscribed>;

/**
 * `GET /api/notifications/push/key`: the deployment's VAPID public key (the `applicationServerKey`
 * of `PushManager.subscribe`, base64url of the uncompressed P-256 point); null when push is off.
 */
export const PushKeyDto = z.object({ public_key: z.string().nullable() });
export type PushKeyDto = z.infer<typeof PushKeyDto>;

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
    /** One line for a person (`notificationLine`): stored, mailed and pushed as it is. */
    summary: StoredText(NOTIFICATION_SUMMARY_MAX).min(1),
    refs: NotificationRefs,
  })
  .strict();
/**
 * `notification_id` null with `skipped`: nothing was written, as the rules say (`user_online`: a
 * `turn_finished` for a user who has a socket open, and so saw the turn end).
 */
export const NotifyEventReply = z.object({
  notification_id: z.string().nullable(),
  duplicate: z.boolean(),
  skipped: z.enum(['user_online']).optional(),
});

export const NotificationSettingsRequest = z.object({ actor: Actor });
export const NotificationSettingsPutRequest = z.object({ actor: Actor, settings: NotificationSettings });
export const WebhooksListRequest = z.object({ actor: Actor });
export const WebhookCreateRequest = z.object({ actor: Actor, webhook: WebhookInput });
export const WebhookRequest = z.object({ actor: Actor, webhook_id: Id });
export const WebhookDeleted = z.object({ deleted: z.literal(true) });

export const PushKeyRequest = z.object({ actor: Actor });
export const PushSubscriptionsListRequest = z.object({ actor: Actor });
export const PushSubscribeRequest = z.object({ actor: Actor, subscription: PushSubscriptionInput });
export const PushSubscriptionRequest = z.object({ actor: Actor, subscription_id: Id });
export const PushSubscriptionDeleted = z.object({ deleted: z.literal(true) });
