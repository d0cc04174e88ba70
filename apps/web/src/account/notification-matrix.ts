import type { NotificationChannelName, NotificationKind, NotificationSettings } from '@skald/contracts';
import { NOTIFICATION_CHANNELS, NOTIFICATION_KINDS } from '@skald/contracts/notify-kinds';

/**
 * The notification settings as a matrix of kinds × channels, derived from the contracts' lists: a
 * kind or a channel added there is a row or a column here with no change to this page.
 */

/** What each kind means to the person reading the page (the compiler asks for a new kind's words). */
const KIND_LABELS: Record<NotificationKind, string> = {
  approval_requested: 'An approval waits for you',
  question_asked: 'The agent asks you a question',
  job_needs_human: 'A job waits for a human',
  job_finished: 'A job finished',
  turn_finished: 'A reply is ready while you are away',
};

/** Channel names as people read them; a channel without one here is shown by its name. */
const CHANNEL_LABELS: Partial<Record<string, string>> = { webhook: 'Webhook', email: 'E-mail', push: 'Push' };

export const kindLabel = (k: NotificationKind): string => KIND_LABELS[k];
export const channelLabel = (c: string): string => CHANNEL_LABELS[c] ?? c.charAt(0).toUpperCase() + c.slice(1);

export const KINDS: readonly NotificationKind[] = NOTIFICATION_KINDS;
export const CHANNELS: readonly NotificationChannelName[] = NOTIFICATION_CHANNELS;

type Channels = Partial<Record<string, readonly NotificationKind[]>>;

/** Whether `settings` send `kind` to `channel` (a channel the stored settings do not name yet: none). */
export function isOn(
  settings: NotificationSettings,
  channel: NotificationChannelName,
  kind: NotificationKind,
): boolean {
  return ((settings.channels as Channels)[channel] ?? []).includes(kind);
}

/** The settings with one cell switched, every list kept in the contracts' order of kinds. */
export function toggled(
  settings: NotificationSettings,
  channel: NotificationChannelName,
  kind: NotificationKind,
): NotificationSettings {
  const on = isOn(settings, channel, kind);
  const next: Record<string, NotificationKind[]> = {};
  for (const c of CHANNELS) next[c] = KINDS.filter((k) => (c === channel && k === kind ? !on : isOn(settings, c, k)));
  const channels: NotificationSettings['channels'] = { ...settings.channels, ...next };
  return { ...settings, channels };
}

/** The time zones the browser knows, the reader's own first; a runtime without the list offers the reader's and UTC. */
export function timeZones(own: string): string[] {
  const intl = Intl as { supportedValuesOf?: (k: string) => string[] };
  const all = intl.supportedValuesOf?.('timeZone') ?? [];
  return [own, ...(all.includes('UTC') ? [] : ['UTC']), ...all.filter((z) => z !== own)];
}
