import { describe, expect, it } from '@jest/globals';
import { DEFAULT_NOTIFICATION_SETTINGS, NOTIFICATION_CHANNELS, NOTIFICATION_KINDS } from '@skald/contracts';
import { channelLabel, CHANNELS, isOn, kindLabel, KINDS, timeZones, toggled } from './notification-matrix';

describe('the notification matrix', () => {
  it('has a row per kind and a column per channel of the contracts, each with words', () => {
    expect(KINDS).toEqual(NOTIFICATION_KINDS);
    expect(CHANNELS).toEqual(NOTIFICATION_CHANNELS);
    for (const k of KINDS) expect(kindLabel(k)).toMatch(/^[A-Z]/);
    for (const c of CHANNELS) expect(channelLabel(c)).toMatch(/^[A-Z]/);
    // A channel the page has no words for yet is still a column, named by itself.
    expect(channelLabel('pager')).toBe('Pager');
  });

  it('reads the stored settings and switches exactly one cell, keeping the order of kinds', () => {
    const s = DEFAULT_NOTIFICATION_SETTINGS;
    expect(isOn(s, 'email', 'approval_requested')).toBe(true);
    expect(isOn(s, 'email', 'job_finished')).toBe(false);
    const on = toggled(s, 'email', 'job_finished');
    expect(on.channels.email).toEqual(['approval_requested', 'question_asked', 'job_needs_human', 'job_finished']);
    expect(on.channels.webhook).toEqual(s.channels.webhook);
    expect(toggled(on, 'email', 'job_finished')).toEqual(s);
    expect(on.quiet_hours).toBeNull();
  });

  it('a channel the stored settings do not name yet reads as off and can be switched on', () => {
    const s = { ...DEFAULT_NOTIFICATION_SETTINGS, channels: { webhook: [], email: [], push: [] } };
    delete (s.channels as Record<string, unknown>).email;
    expect(isOn(s, 'email', 'turn_finished')).toBe(false);
    expect(toggled(s, 'email', 'turn_finished').channels.email).toEqual(['turn_finished']);
  });

  it("offers the reader's time zone first, and UTC", () => {
    const zones = timeZones('Europe/Berlin');
    expect(zones[0]).toBe('Europe/Berlin');
    expect(zones).toContain('UTC');
    expect(new Set(zones).size).toBe(zones.length);
  });
});
