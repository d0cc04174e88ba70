import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { queryRows } from '@skald/persistence/query-rows';
import type { Actor } from '@skald/contracts';
import type { JobEngine } from './job-engine';
import type { JobSessionsPort, UserPagesPort } from './job-ports';
import { JobsRepository } from './jobs.repository';
import { JobsService } from './jobs.service';

/** The periodic system tick: a user's tic job is a schedule BullMQ mirrors (`SKALD_TIC_CRON`). */
describe('tic schedule', () => {
  // A private copy of the jobs table: applying SKALD_TIC_CRON rewrites every user's tic job, and the
  // other scheduler specs of this Jest process (job-engine's tic test among them) run engines on the
  // public one, which would mirror and fire this file's tic jobs.
  const schema = `tic_schedule_${process.pid}`;
  let admin: DataSource;
  let ds: DataSource;
  let repo: JobsRepository;
  const engine = {
    fire: () => Promise.resolve(randomUUID()),
  } as unknown as JobEngine;

  beforeAll(async () => {
    admin = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 1 } });
    await admin.initialize();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.query(`CREATE TABLE ${schema}.scheduled_jobs (LIKE public.scheduled_jobs INCLUDING ALL)`);
    ds = new DataSource({
      type: 'postgres',
      url: process.env.DATABASE_URL,
      extra: { max: 2, options: `-c search_path=${schema}` },
    });
    await ds.initialize();
    repo = new JobsRepository(ds);
  });
  afterAll(async () => {
    await ds?.destroy();
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.destroy();
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

  it('every user ticks without pressing anything: bounded passes give each one tic job', async () => {
    const users = Array.from({ length: 5 }, () => randomUUID()).sort();
    const asked: number[] = [];
    const owners: UserPagesPort = {
      page: (after, limit) => {
        const rest = users.filter((u) => after === null || u > after);
        const items = rest.slice(0, limit).map((u) => ({ user_id: u, role: 'user' as const }));
        asked.push(items.length);
        return Promise.resolve({ items, next: items.length === limit ? items[limit - 1].user_id : null });
      },
    };
    const s = service('0 * * * *');
    // Two users a pass: three passes reach all five, each reading at most two.
    for (let i = 0; i < 3; i++) await s.ensureTics(owners, 2);
    expect(Math.max(...asked)).toBeLessThanOrEqual(2);
    for (const u of users) expect(await ticOf(u)).toMatchObject({ cron: '0 * * * *', enabled: true, agent_id: 'tic' });
    // A pressed "run now" and further rounds find the same job: one tic job per user.
    const before = (await ticOf(users[0]))!.id;
    await s.ticTrigger({ userId: users[0], role: 'user' });
    for (let i = 0; i < 3; i++) expect(await s.ensureTics(owners, 2)).toBe(0);
    const [{ n }] = await queryRows<{ n: number }>(
      ds,
      `SELECT count(*)::int AS n FROM scheduled_jobs WHERE kind = 'tic' AND user_id = ANY($1::uuid[])`,
      [users],
    );
    expect(n).toBe(5);
    expect((await ticOf(users[0]))!.id).toBe(before);
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
