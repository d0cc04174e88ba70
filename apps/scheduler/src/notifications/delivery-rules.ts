import type { NotificationChannelName, NotificationKind, NotificationSettings, QuietHours } from '@skald/contracts';

/**
 * The rules of notification delivery, pure: the retry schedule, quiet hours, which kinds go to
 * which channel, and when a webhook that keeps failing is switched off. The pipeline and every
 * channel (webhook, e-mail, push) ask these and nothing else.
 */

export interface RetryPolicy {
  /** Attempts in all, the first included; the bound of every retry loop. */
  maxAttempts: number;
  /** Delay before the second attempt; each further one doubles it. */
  baseDelayMs: number;
  /** No delay is longer than this. */
  maxDelayMs: number;
}

/** What one attempt of a channel came to. */
export type AttemptResult =
  | { kind: 'delivered'; responseCode?: number }
  /** Worth trying again (a timeout, a 5xx, a refused connection). */
  | { kind: 'transient'; error: string; responseCode?: number }
  /**
   * Trying again cannot help (a target that resolves to a private address, a 410 Gone);
   * `targetGone`: the target itself no longer exists (a push subscription the push service
   * answered 404 or 410 for) and is removed.
   */
  | { kind: 'permanent'; error: string; responseCode?: number; targetGone?: true };

/** What the pipeline does after an attempt. */
export type NextStep =
  | { kind: 'delivered' }
  | { kind: 'retry'; delayMs: number }
  /** No attempt is left, or none could help: the delivery ends as failed. */
  | { kind: 'failed'; error: string };

/** The delay before attempt `attempt + 1` after attempt `attempt` (1-based) failed. */
export function backoffDelayMs(attempt: number, policy: RetryPolicy): number {
  const exponent = Math.max(0, Math.min(attempt - 1, 30));
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** exponent);
}

/** After attempt number `attempt` (1-based) came to `result`. */
export function nextStep(attempt: number, result: AttemptResult, policy: RetryPolicy): NextStep {
  switch (result.kind) {
    case 'delivered':
      return { kind: 'delivered' };
    case 'permanent':
      return { kind: 'failed', error: result.error };
    case 'transient':
      return attempt >= policy.maxAttempts
        ? { kind: 'failed', error: `gave up after ${attempt} attempts: ${result.error}` }
        : { kind: 'retry', delayMs: backoffDelayMs(attempt, policy) };
  }
}

/**
 * A webhook's count of deliveries that failed in a row, after one more ended: a success resets
 * it; reaching `threshold` disables the webhook (the owner is told once, by the caller).
 */
export function webhookHealthAfter(
  consecutiveFailures: number,
  ended: 'delivered' | 'failed',
  threshold: number,
): { consecutiveFailures: number; disable: boolean } {
  if (ended === 'delivered') return { consecutiveFailures: 0, disable: false };
  const next = consecutiveFailures + 1;
  return { consecutiveFailures: next, disable: next >= threshold };
}

/**
 * Whether the user has a socket open on any gateway, as asked when the event arrives; `unknown`
 * when no gateway could say in time.
 */
export type Presence = 'online' | 'away' | 'unknown';

/**
 * Whether an event of `kind` asks for the user's presence before it is written: a turn that
 * finished is news only to a user who was not watching it.
 */
export function dependsOnPresence(kind: NotificationKind): boolean {
  switch (kind) {
    case 'turn_finished':
      return true;
    case 'approval_requested':
    case 'question_asked':
    case 'job_needs_human':
    case 'job_finished':
      return false;
  }
}

/**
 * Whether an event is written at all, given the user's presence: one that depends on it only when
 * the user is away, or when nobody could say (a notice too many beats one missed).
 */
export function recordsEvent(kind: NotificationKind, presence: Presence): boolean {
  return !dependsOnPresence(kind) || presence !== 'online';
}

/** The channels a user's settings send `kind` to. */
export function channelsFor(settings: NotificationSettings, kind: NotificationKind): NotificationChannelName[] {
  const out: NotificationChannelName[] = [];
  if (settings.channels.webhook.includes(kind)) out.push('webhook');
  if (settings.channels.email.includes(kind)) out.push('email');
  if (settings.channels.push.includes(kind)) out.push('push');
  return out;
}

/** Whether an admin webhook (every user's events, or only `kinds`) takes `kind`; `null` means all. */
export function webhookTakes(kinds: readonly NotificationKind[] | null, kind: NotificationKind): boolean {
  return kinds === null || kinds.includes(kind);
}

/** Channels read by people (e-mail, push), which quiet hours hold; webhooks are read by machines. */
export function heldByQuietHours(channel: NotificationChannelName): boolean {
  switch (channel) {
    case 'webhook':
      return false;
    case 'email':
    case 'push':
      return true;
  }
}

const MINUTE = 60_000;
const DAY_MINUTES = 24 * 60;

function minutesOf(clock: string): number {
  const [h, m] = clock.split(':').map(Number);
  return h * 60 + m;
}

/** One formatter per time zone (the runtime knows a few hundred); building one is the slow part. */
const formatters = new Map<string, Intl.DateTimeFormat>();
function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    if (formatters.size >= 1_000) formatters.clear();
    formatters.set(timeZone, f);
  }
  return f;
}

/** The local wall-clock minute of the day of `at` in `timeZone`. */
export function localMinuteOfDay(at: Date, timeZone: string): number {
  const parts = formatterOf(timeZone).formatToParts(at);
  const hour = Number(parts.find((p) => p.type === 'hour')?.value);
  const minute = Number(parts.find((p) => p.type === 'minute')?.value);
  return hour * 60 + minute;
}

/** Whether `at` falls in the quiet hours (start inclusive, end exclusive). */
export function inQuietHours(at: Date, quiet: QuietHours): boolean {
  const start = minutesOf(quiet.start);
  const end = minutesOf(quiet.end);
  if (start === end) return false;
  const now = localMinuteOfDay(at, quiet.time_zone);
  return start < end ? now >= start && now < end : now >= start || now < end;
}

/**
 * When a notification for people created at `at` may go out: `at` itself outside quiet hours,
 * else the first minute after they end (found by walking the wall clock a minute at a time, at
 * most one day and a bit, so that daylight-saving jumps need no special case).
 */
export function releaseTime(at: Date, quiet: QuietHours | null): Date {
  if (!quiet || !inQuietHours(at, quiet)) return at;
  const firstMinute = new Date(Math.floor(at.getTime() / MINUTE) * MINUTE);
  for (let i = 1; i <= DAY_MINUTES + 120; i++) {
    const candidate = new Date(firstMinute.getTime() + i * MINUTE);
    if (!inQuietHours(candidate, quiet)) return candidate;
  }
  return at;
}
