import fc from 'fast-check';
import { SchedulerConfigSchema } from './config';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

describe('SKALD_TIC_CRON', () => {
  it('defaults to hourly, accepts a cron expression or `off`, refuses anything else', () => {
    expect(SchedulerConfigSchema.parse({}).SKALD_TIC_CRON).toBe('0 * * * *');
    expect(SchedulerConfigSchema.parse({ SKALD_TIC_CRON: '*/30 * * * *' }).SKALD_TIC_CRON).toBe('*/30 * * * *');
    expect(SchedulerConfigSchema.parse({ SKALD_TIC_CRON: 'off' }).SKALD_TIC_CRON).toBe('off');
    for (const bad of ['', 'hourly', '* * *', '61 * * * *', '* * * * * * *', '*/10 * * * * *'])
      expect(SchedulerConfigSchema.safeParse({ SKALD_TIC_CRON: bad }).success).toBe(false);
  });

  it('any value is either accepted or refused by the schema, never thrown past it', () => {
    console.log(`tic cron config: seed=${SEED} — reproduce with FC_SEED=${SEED}`);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 60 }),
          fc
            .array(fc.constantFrom('*', '*/5', '0', '59', '1-5', 'L', '#', '?', 'MON', '\u0000', ' '), {
              maxLength: 8,
            })
            .map((a) => a.join(' ')),
        ),
        (value) => {
          const r = SchedulerConfigSchema.safeParse({ SKALD_TIC_CRON: value });
          return typeof r.success === 'boolean';
        },
      ),
      { seed: SEED, numRuns: 50 },
    );
  });
});
