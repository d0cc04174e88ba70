import fc from 'fast-check';
import { DEFAULT_NOTIFICATION_SETTINGS, NOTIFICATION_KINDS, NotificationSettings, QuietHours } from '@skald/contracts';
import {
  backoffDelayMs,
  channelsFor,
  dependsOnPresence,
  heldByQuietHours,
  inQuietHours,
  nextStep,
  recordsEvent,
  releaseTime,
  RetryPolicy,
  webhookHealthAfter,
  webhookTakes,
  type AttemptResult,
} from './delivery-rules';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const policy: RetryPolicy = { maxAttempts: 6, baseDelayMs: 10_000, maxDelayMs: 3_600_000 };

describe('the retry schedule', () => {
  it('doubles from the base and stops growing at the cap', () => {
    expect([1, 2, 3, 4, 5].map((a) => backoffDelayMs(a, policy))).toEqual([10_000, 20_000, 40_000, 80_000, 160_000]);
    expect(backoffDelayMs(40, policy)).toBe(3_600_000);
    expect(backoffDelayMs(1e9, policy)).toBe(3_600_000);
  });

  it('every delivery ends within maxAttempts attempts, whatever the channel answers', () => {
    console.log(`retry bound property seed: ${SEED}`);
    const result: fc.Arbitrary<AttemptResult> = fc.oneof(
      fc.constant<AttemptResult>({ kind: 'transient', error: 'timeout' }),
      fc.constant<AttemptResult>({ kind: 'permanent', error: 'gone', responseCode: 410 }),
      fc.constant<AttemptResult>({ kind: 'delivered', responseCode: 204 }),
    );
    const policies = fc.record({
      maxAttempts: fc.integer({ min: 1, max: 20 }),
      baseDelayMs: fc.integer({ min: 1, max: 60_000 }),
      maxDelayMs: fc.integer({ min: 60_000, max: 86_400_000 }),
    });
    fc.assert(
      fc.property(policies, fc.array(result, { minLength: 25, maxLength: 25 }), (p, answers) => {
        let attempt = 0;
        let waited = 0;
        // bounded by the answers given: a rule that never stops retrying ends here and fails below
        while (attempt < answers.length) {
          attempt++;
          const step = nextStep(attempt, answers[attempt - 1], p);
          if (step.kind !== 'retry') break;
          expect(step.delayMs).toBeGreaterThan(0);
          expect(step.delayMs).toBeLessThanOrEqual(p.maxDelayMs);
          waited += step.delayMs;
        }
        expect(attempt).toBeLessThanOrEqual(p.maxAttempts);
        expect(waited).toBeLessThanOrEqual(p.maxDelayMs * p.maxAttempts);
      }),
      { seed: SEED, numRuns: 1000 },
    );
  });

  it('a refusal that cannot change is not retried; the last transient failure names the attempts', () => {
    expect(nextStep(1, { kind: 'permanent', error: 'private address' }, policy)).toEqual({
      kind: 'failed',
      error: 'private address',
    });
    expect(nextStep(6, { kind: 'transient', error: 'HTTP 503' }, policy)).toEqual({
      kind: 'failed',
      error: 'gave up after 6 attempts: HTTP 503',
    });
    expect(nextStep(5, { kind: 'transient', error: 'HTTP 503' }, policy)).toEqual({ kind: 'retry', delayMs: 160_000 });
  });
});

describe('disable after N failed deliveries in a row', () => {
  it('disables exactly at the threshold, and a success starts the count again', () => {
    let health = { consecutiveFailures: 0, disable: false };
    const seen: boolean[] = [];
    for (const ended of ['failed', 'failed', 'delivered', 'failed', 'failed', 'failed'] as const) {
      health = webhookHealthAfter(health.consecutiveFailures, ended, 3);
      seen.push(health.disable);
    }
    expect(seen).toEqual([false, false, false, false, false, true]);
  });
});

describe('which channel takes which kind', () => {
  it('follows the user settings, per kind', () => {
    const s: NotificationSettings = {
      channels: { webhook: ['job_finished'], email: ['approval_requested', 'job_finished'], push: ['turn_finished'] },
      quiet_hours: null,
    };
    expect(channelsFor(s, 'approval_requested')).toEqual(['email']);
    expect(channelsFor(s, 'job_finished')).toEqual(['webhook', 'email']);
    expect(channelsFor(s, 'turn_finished')).toEqual(['push']);
    expect(channelsFor(s, 'question_asked')).toEqual([]);
    expect(channelsFor(DEFAULT_NOTIFICATION_SETTINGS, 'approval_requested')).toEqual(['webhook', 'email', 'push']);
    // a phone is told everything that waits for its user or ended
    for (const k of NOTIFICATION_KINDS) expect(channelsFor(DEFAULT_NOTIFICATION_SETTINGS, k)).toContain('push');
  });

  it('quiet hours hold what people read (e-mail, push), not webhooks', () => {
    expect(heldByQuietHours('push')).toBe(true);
    expect(heldByQuietHours('email')).toBe(true);
    expect(heldByQuietHours('webhook')).toBe(false);
  });

  it('settings saved before push existed read as the push defaults', () => {
    const old = NotificationSettings.parse({
      channels: { webhook: [], email: ['approval_requested'] },
      quiet_hours: null,
    });
    expect(old.channels.push).toEqual(DEFAULT_NOTIFICATION_SETTINGS.channels.push);
    expect(NotificationSettings.safeParse({ ...old, channels: { ...old.channels, sms: [] } }).success).toBe(false);
  });

  it('an admin webhook takes every kind, or only the kinds chosen', () => {
    for (const k of NOTIFICATION_KINDS) expect(webhookTakes(null, k)).toBe(true);
    expect(webhookTakes(['approval_requested'], 'approval_requested')).toBe(true);
    expect(webhookTakes(['approval_requested'], 'turn_finished')).toBe(false);
    expect(webhookTakes([], 'turn_finished')).toBe(false);
  });
});

describe('quiet hours (time zone aware)', () => {
  const night: QuietHours = { start: '22:00', end: '07:00', time_zone: 'Europe/Berlin' };

  it('cross midnight in the user time zone, not the server one', () => {
    // 21:30 UTC on 15 January is 22:30 in Berlin (UTC+1): quiet.
    expect(inQuietHours(new Date('2026-01-15T21:30:00Z'), night)).toBe(true);
    // 20:59 UTC is 21:59 in Berlin: not yet.
    expect(inQuietHours(new Date('2026-01-15T20:59:00Z'), night)).toBe(false);
    // 05:59 UTC is 06:59: still quiet; 06:00 UTC is 07:00: the end is exclusive.
    expect(inQuietHours(new Date('2026-01-16T05:59:00Z'), night)).toBe(true);
    expect(inQuietHours(new Date('2026-01-16T06:00:00Z'), night)).toBe(false);
    // Summer time (UTC+2): 20:30 UTC in July is 22:30 in Berlin.
    expect(inQuietHours(new Date('2026-07-15T20:30:00Z'), night)).toBe(true);
    expect(inQuietHours(new Date('2026-07-15T20:30:00Z'), { ...night, time_zone: 'UTC' })).toBe(false);
  });

  it('equal start and end mean none; a same-day window works', () => {
    expect(inQuietHours(new Date('2026-01-15T12:00:00Z'), { start: '09:00', end: '09:00', time_zone: 'UTC' })).toBe(
      false,
    );
    const lunch: QuietHours = { start: '12:00', end: '13:00', time_zone: 'UTC' };
    expect(inQuietHours(new Date('2026-01-15T12:30:00Z'), lunch)).toBe(true);
    expect(inQuietHours(new Date('2026-01-15T13:00:00Z'), lunch)).toBe(false);
  });

  it('a held notification is released at the end of the quiet hours, across a DST change too', () => {
    expect(releaseTime(new Date('2026-01-15T23:10:20Z'), night).toISOString()).toBe('2026-01-16T06:00:00.000Z');
    // The night of 28-29 March 2026 Berlin moves from UTC+1 to UTC+2: 07:00 local is 05:00 UTC.
    expect(releaseTime(new Date('2026-03-28T23:00:00Z'), night).toISOString()).toBe('2026-03-29T05:00:00.000Z');
    const t = new Date('2026-01-15T12:00:00Z');
    expect(releaseTime(t, night)).toBe(t);
    expect(releaseTime(t, null)).toBe(t);
  });

  it('a release is never in the quiet hours and never more than a day away (generated)', () => {
    const clock = fc
      .tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }))
      .map(([h, m]) => `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`);
    const zone = fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe');
    const instant = fc.integer({ min: Date.UTC(2025, 0, 1), max: Date.UTC(2028, 0, 1) }).map((ms) => new Date(ms));
    fc.assert(
      fc.property(clock, clock, zone, instant, (start, end, time_zone, at) => {
        const q = { start, end, time_zone };
        const r = releaseTime(at, q);
        expect(r.getTime()).toBeGreaterThanOrEqual(at.getTime());
        expect(r.getTime() - at.getTime()).toBeLessThanOrEqual(25 * 3_600_000);
        expect(inQuietHours(r, q)).toBe(false);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });
});

describe('which events depend on the user being away', () => {
  it('only a finished turn waits on presence; every other kind is written whoever watches', () => {
    for (const kind of NOTIFICATION_KINDS) {
      const depends = dependsOnPresence(kind);
      expect(depends).toBe(kind === 'turn_finished');
      expect(recordsEvent(kind, 'away')).toBe(true);
      expect(recordsEvent(kind, 'unknown')).toBe(true);
      expect(recordsEvent(kind, 'online')).toBe(!depends);
    }
  });
});
