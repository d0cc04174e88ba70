import { InvalidCronError, lastFireAtOrBefore, nextFire, validateCron } from './cron-spec';

describe('cron expressions', () => {
  const now = new Date('2026-03-01T12:00:00Z');

  it('accepts five fields and six with seconds first, in a timezone', () => {
    expect(() => validateCron('0 7 * * *', 'Europe/Berlin', 60, now)).not.toThrow();
    expect(() => validateCron('*/5 * * * * *', 'UTC', 1, now)).not.toThrow();
    // seven at Berlin time is six UTC in winter
    expect(nextFire('0 7 * * *', 'Europe/Berlin', now)?.toISOString()).toBe('2026-03-02T06:00:00.000Z');
    expect(nextFire('30 0 7 * * *', 'UTC', now)?.toISOString()).toBe('2026-03-02T07:00:30.000Z');
  });

  it('refuses a wrong field count, garbage, an unknown timezone, naming the field', () => {
    const field = (f: () => void) => {
      try {
        f();
      } catch (e) {
        return e instanceof InvalidCronError ? e.field : 'other';
      }
      return 'none';
    };
    expect(field(() => validateCron('* * *', 'UTC', 60, now))).toBe('cron');
    expect(field(() => validateCron('61 * * * *', 'UTC', 60, now))).toBe('cron');
    expect(field(() => validateCron('0 7 * * *', 'Mars/Olympus', 60, now))).toBe('timezone');
  });

  it('refuses a schedule that fires more often than the minimum interval', () => {
    expect(() => validateCron('* * * * * *', 'UTC', 60, now)).toThrow(/minimum interval/);
    expect(() => validateCron('*/30 * * * * *', 'UTC', 60, now)).toThrow(/every 60 s/);
    expect(() => validateCron('* * * * *', 'UTC', 60, now)).not.toThrow();
  });

  it('finds the one due time a catch-up runs after downtime: the last one missed', () => {
    expect(lastFireAtOrBefore('0 * * * *', 'UTC', new Date('2026-03-01T15:20:00Z'))?.toISOString()).toBe(
      '2026-03-01T15:00:00.000Z',
    );
    expect(lastFireAtOrBefore('0 * * * *', 'UTC', new Date('2026-03-01T15:00:00Z'))?.toISOString()).toBe(
      '2026-03-01T15:00:00.000Z',
    );
  });
});
