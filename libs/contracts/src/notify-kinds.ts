/**
 * The notification kinds and channels (zod-free: the web client's settings page reads them, and
 * its bundle takes no zod). `notify.ts` builds every schema of notifications from these lists.
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
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

/** How one notification reaches one target. */
export const NOTIFICATION_CHANNELS = ['webhook', 'email', 'push'] as const;
export type NotificationChannelName = (typeof NOTIFICATION_CHANNELS)[number];

/** "1 failed delivery in a row", "3 failed deliveries in a row": how a webhook's failures read. */
export function failedInARow(n: number): string {
  return `${n} failed ${n === 1 ? 'delivery' : 'deliveries'} in a row`;
}

/** The longest summary a notification keeps, in UTF-16 code units. */
export const NOTIFICATION_SUMMARY_MAX = 1_000;

/** U+FFFD, what a character a notification cannot carry reads as. */
const REPLACEMENT = '\uFFFD';

/** C0 and C1 control characters, DEL, and surrogates without their pair. */
/* eslint-disable no-control-regex -- the control characters are what it finds */
const UNCARRIED =
  /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/* eslint-enable no-control-regex */

/**
 * Text from a model, a tool or a user as one line of a notification (a push body, an e-mail
 * subject, a webhook's summary): runs of white space become one space; NUL, the other control
 * characters and lone surrogates (what Postgres text, a mail header or a phone cannot carry)
 * become U+FFFD; longer than `max` UTF-16 code units, it is cut before a whole character and ends
 * with `…`.
 */
export function notificationLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim().replace(UNCARRIED, REPLACEMENT);
  if (flat.length <= max) return flat;
  let cut = max - 1;
  if (/[\udc00-\udfff]/.test(flat[cut] ?? '')) cut--;
  return `${flat.slice(0, cut)}…`;
}
