import { expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { Actor } from '@skald/contracts';
import { RemoteError } from '@skald/messaging/bus-errors';
import { recordAttackSuite } from '@skald/testing';
import type { JobEngine } from './job-engine';
import type { JobSessionsPort } from './job-ports';
import { JobsRepository } from './jobs.repository';
import { JobsService } from './jobs.service';

/** Per-user cap on cron jobs (`SKALD_MAX_CRON_JOBS_PER_USER`), enforced by the scheduler that owns them. */
jest.setTimeout(120_000);

describe('cron jobs: per-user cap', () => {
  // A private copy of the jobs table, as tic-schedule does: no other spec's engine mirrors these jobs.
  const schema = `cron_cap_${process.pid}`;
  let admin: DataSource;
  let ds: DataSource;
  let repo: JobsRepository;
  const engine = { sync: () => Promise.resolve() } as unknown as JobEngine;

  beforeAll(async () => {
    admin = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 1 } });
    await admin.initialize();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.query(`CREATE TABLE ${schema}.scheduled_jobs (LIKE public.scheduled_jobs INCLUDING ALL)`);
    await admin.query(`CREATE TABLE ${schema}.job_runs (LIKE public.job_runs INCLUDING ALL)`);
    ds = new DataSource({
      type: 'postgres',
      url: process.env.DATABASE_URL,
      extra: { max: 8, options: `-c search_path=${schema}` },
    });
    await ds.initialize();
    repo = new JobsRepository(ds);
  });
  afterAll(async () => {
    await ds?.destroy();
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.destroy();
  });

  const service = (cap: number) =>
    new JobsService(repo, engine, {} as JobSessionsPort, {
      minIntervalS: 60,
      maxAsyncPerUser: 5,
      maxCronPerUser: cap,
      ticCron: null,
    });
  const create = (svc: JobsService, actor: Actor, i: number) =>
    svc.create(actor, { title: `job ${i}`, prompt: 'do it', cron: '0 * * * *' });

  it('40 concurrent creates at a cap of 5: exactly 5 succeed, the rest get rate_limited naming the cap', async () => {
    const actor: Actor = { userId: randomUUID(), role: 'user' };
    const other: Actor = { userId: randomUUID(), role: 'user' };
    const svc = service(5);
    const rs = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => create(svc, actor, i)));
    const ok = rs.filter((r) => r.status === 'fulfilled').length;
    const refused = rs.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    recordAttackSuite('fairness', 'cron jobs cap', { attempts: 40, accepted: ok, cap: 5 });
    expect(ok).toBe(5);
    expect(refused).toHaveLength(35);
    for (const e of refused) {
      expect(e).toBeInstanceOf(RemoteError);
      expect((e as RemoteError).body).toEqual({
        code: 'rate_limited',
        message: expect.stringMatching(
          /^per-user limit cron_jobs reached: at most 5 cron jobs \(you have 5\), set by SKALD_MAX_CRON_JOBS_PER_USER\./,
        ),
      });
    }
    expect((await service(5).list(actor)).items).toHaveLength(5);
    // Another user's jobs are their own: not counted against this one.
    await expect(create(svc, other, 0)).resolves.toMatchObject({ id: expect.any(String) });
    // A deleted job frees its place.
    const [first] = (await svc.list(actor)).items;
    await svc.delete(actor, first.id);
    await expect(create(svc, actor, 99)).resolves.toMatchObject({ id: expect.any(String) });
    await expect(create(svc, actor, 100)).rejects.toBeInstanceOf(RemoteError);
  });
});
