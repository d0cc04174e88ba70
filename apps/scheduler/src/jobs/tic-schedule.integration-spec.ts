import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { Actor } from '@skald/contracts';
import type { JobEngine } from './job-engine';
import type { JobSessionsPort } from './job-ports';
import { JobsRepository } from './jobs.repository';
import { JobsService } from './jobs.service';

/** The periodic system tick: a user's tic job is a schedule BullMQ mirrors (`SKALD_TIC_CRON`). */
describe('tic schedule', () => {
  let ds: DataSource;
  let repo: JobsRepository;
  const fired: string[] = [];
  const engine = {
    fire: (jobId: string) => (fired.push(jobId), Promise.resolve(randomUUID())),
  } as unknown as JobEngine;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
    repo = new JobsRepository(ds);
  });
  afterAll(async () => {
    await ds.query(`UPDATE scheduled_jobs SET enabled = false WHERE id = ANY($1)`, [fired]);
    await ds?.destroy();
  });

  const service = (ticCron: string | null) =>
    new JobsService(repo, engine, {} as JobSessionsPort, { minIntervalS: 60, maxAsyncPerUser: 5, ticCron });
  const ticOf = async (userId: string) =>
    (await repo.enabledSchedules()).find((j) => j.user_id === userId && j.kind === 'tic');

  it('is created enabled on the default hourly schedule, with its next fire set', async () => {
    const actor: Actor = { userId: randomUUID(), role: 'user' };
    await service('0 * * * *').ticTrigger(actor);
    const tic = await ticOf(actor.userId);
    expect(tic).toMatchObject({ cron: '0 * * * *', enabled: true });
    const next = new Date(tic!.next_run_at!);
    expect(next.getTime()).toBeGreaterThan(Date.now());
    expect(next.getTime() - Date.now()).toBeLessThanOrEqual(3_600_000);
    expect(next.getUTCMinutes()).toBe(0);
  });

  it('follows a changed SKALD_TIC_CRON at start, and stops ticking when it is off', async () => {
    const actor: Actor = { userId: randomUUID(), role: 'user' };
    await service('0 * * * *').ticTrigger(actor);
    await service('*/30 * * * *').applyTicSchedule();
    expect(await ticOf(actor.userId)).toMatchObject({ cron: '*/30 * * * *', enabled: true });
    await service(null).applyTicSchedule();
    expect(await ticOf(actor.userId)).toBeUndefined();
  });
});
