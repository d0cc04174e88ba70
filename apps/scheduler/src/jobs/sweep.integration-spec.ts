import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import Redis from 'ioredis';
import pino from 'pino';
import { DataSource } from 'typeorm';
import type { Actor, JobSessionStatusReply } from '@skald/contracts';
import { queryRows } from '@skald/persistence/query-rows';
import { PrivateRedis } from '@skald/testing';
import { JobEngine } from './job-engine';
import type { JobSessionsPort } from './job-ports';
import { JobsRepository } from './jobs.repository';
import { RunRow, timestampFromJson } from './job-rows';

jest.setTimeout(180_000);

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.FC_RUNS ?? 60);
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald_test';
const STALE_MS = 15_000;
const ME = 'me';

/**
 * The sweep as five separate statements, word for word (what the one statement in
 * jobs.repository.ts must be equivalent to): the reference the one statement is compared with.
 */
const legacy = {
  async heartbeatAndAdopt(ds: DataSource, runner: string, staleMs: number): Promise<void> {
    await ds.query(`UPDATE job_runs SET heartbeat_at = now() WHERE runner = $1 AND status IN ('starting', 'running')`, [
      runner,
    ]);
    await ds.query(
      `UPDATE job_runs SET runner = $1, heartbeat_at = now(), attempt = attempt + 1
        WHERE status IN ('starting', 'running') AND heartbeat_at < now() - ($2::int * interval '1 millisecond')`,
      [runner, staleMs],
    );
  },
  openRunsOf(ds: DataSource, runner: string): Promise<RunRow[]> {
    return queryRows<RunRow>(
      ds,
      `SELECT * FROM job_runs WHERE runner = $1 AND status IN ('starting', 'running') ORDER BY started_at`,
      [runner],
    );
  },
  undelivered(ds: DataSource, limit = 20): Promise<RunRow[]> {
    return queryRows<RunRow>(
      ds,
      `SELECT * FROM job_runs WHERE delivered_at IS NULL AND completed_at IS NOT NULL
          AND completed_at < now() - interval '2 seconds' ORDER BY completed_at LIMIT $1`,
      [limit],
    );
  },
  asyncWithoutRun(ds: DataSource, olderThanMs: number): Promise<Array<{ id: string; created_at: Date }>> {
    return queryRows<{ id: string; created_at: Date }>(
      ds,
      `SELECT id, created_at FROM scheduled_jobs j WHERE j.kind = 'async'
          AND j.created_at < now() - ($1::int * interval '1 millisecond')
          AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id) LIMIT 50`,
      [olderThanMs],
    );
  },
};

// Ages in ms before the state's base time, kept 1 s away from every threshold of the sweep (stale
// 15 s, undelivered 2 s, orphan 5 s) so the few ms between the statements cannot flip a row.
const age = (lo: number, hi: number) => fc.integer({ min: lo, max: hi });
const heartbeatAge = fc.oneof(age(0, STALE_MS - 1_000), age(STALE_MS + 1_000, 3_600_000), fc.constant(null));
const completedAge = fc.oneof(age(0, 1_000), age(3_000, 3_600_000));
const createdAge = fc.oneof(age(0, 4_000), age(6_000, 3_600_000));

const runSpec = fc.record({
  open: fc.boolean(),
  openStatus: fc.constantFrom('starting' as const, 'running' as const),
  endStatus: fc.constantFrom('succeeded' as const, 'failed' as const, 'cancelled' as const),
  runner: fc.constantFrom<string | null>(ME, 'other-a', 'other-b', null),
  heartbeatAge,
  completedAge,
  delivered: fc.boolean(),
  killRequested: fc.boolean(),
  withSession: fc.boolean(),
  attempt: fc.integer({ min: 1, max: 4 }),
  text: fc.option(fc.string({ maxLength: 8 })),
});
const jobSpec = fc.record({
  kind: fc.constantFrom('cron' as const, 'async' as const, 'tic' as const),
  createdAge,
  runs: fc.array(runSpec, { maxLength: 3 }),
});
const stateSpec = fc.record({
  jobs: fc.array(jobSpec, { maxLength: 10 }),
  limits: fc.record({ undelivered: fc.integer({ min: 1, max: 20 }) }),
});
type JobSpec = typeof jobSpec extends fc.Arbitrary<infer T> ? T : never;

/** The concrete rows of a generated state, at absolute times (the same rows go into both schemas). */
function rowsOf(state: { jobs: JobSpec[] }, base: number) {
  const jobs: Array<Record<string, unknown>> = [];
  const runs: Array<Record<string, unknown>> = [];
  // distinct start and completion times: both old queries order by a column without a tiebreaker
  let tick = 0;
  for (const j of state.jobs) {
    const jobId = randomUUID();
    const userId = randomUUID();
    jobs.push({ id: jobId, user_id: userId, kind: j.kind, created_at: new Date(base - j.createdAge) });
    let openTaken = false;
    j.runs.forEach((r, i) => {
      const open = r.open && !openTaken; // one open run per job (job_runs_one_open)
      openTaken ||= open;
      tick += 1;
      runs.push({
        id: randomUUID(),
        job_id: jobId,
        user_id: userId,
        due_at: new Date(base - 86_400_000 + i * 60_000),
        attempt: r.attempt,
        status: open ? r.openStatus : r.endStatus,
        session_id: r.withSession ? randomUUID() : null,
        runner: r.runner,
        heartbeat_at: r.heartbeatAge === null ? null : new Date(base - r.heartbeatAge),
        kill_requested_at: r.killRequested ? new Date(base - 500) : null,
        started_at: new Date(base - 7_200_000 + tick * 7),
        completed_at: open ? null : new Date(base - r.completedAge - tick * 3),
        final_response: open ? null : r.text,
        error: open ? null : r.text,
        delivered_at: !open && r.delivered ? new Date(base - 100) : null,
      });
    });
  }
  return { jobs, runs };
}

describe('JobsRepository.sweep: one statement does what the five did', () => {
  let admin: DataSource;
  const schemas = { old: `sweep_old_${process.pid}`, one: `sweep_one_${process.pid}` };
  const db: Record<'old' | 'one', DataSource> = {} as never;

  beforeAll(async () => {
    admin = new DataSource({ type: 'postgres', url: DATABASE_URL, extra: { max: 1 } });
    await admin.initialize();
    // Private copies of the two tables: the sweep reads every user's rows, and the other scheduler
    // specs of this Jest process run engines on the public ones.
    for (const s of Object.values(schemas)) {
      await admin.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
      await admin.query(`CREATE SCHEMA ${s}`);
      await admin.query(`CREATE TABLE ${s}.scheduled_jobs (LIKE public.scheduled_jobs INCLUDING ALL)`);
      await admin.query(`CREATE TABLE ${s}.job_runs (LIKE public.job_runs INCLUDING ALL)`);
      await admin.query(
        `ALTER TABLE ${s}.job_runs ADD FOREIGN KEY (job_id) REFERENCES ${s}.scheduled_jobs(id) ON DELETE CASCADE`,
      );
    }
    for (const k of ['old', 'one'] as const) {
      db[k] = new DataSource({
        type: 'postgres',
        url: DATABASE_URL,
        extra: { max: 3, options: `-c search_path=${schemas[k]}` },
      });
      await db[k].initialize();
    }
    console.log(`scheduler sweep: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`);
  });

  afterAll(async () => {
    for (const k of ['old', 'one'] as const) await db[k]?.destroy();
    for (const s of Object.values(schemas)) await admin?.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
    await admin?.destroy();
  });

  async function load(ds: DataSource, rows: ReturnType<typeof rowsOf>): Promise<void> {
    await ds.query(`DELETE FROM job_runs`);
    await ds.query(`DELETE FROM scheduled_jobs`);
    for (const j of rows.jobs)
      await ds.query(
        `INSERT INTO scheduled_jobs (id, user_id, kind, title, agent_id, prompt, cron, parent_session_id, parent_tool_call_id, created_at)
         VALUES ($1, $2, $3, 't', 'main', 'p', '* * * * *', $4, 'call', $5)`,
        [j.id, j.user_id, j.kind, randomUUID(), j.created_at],
      );
    for (const r of rows.runs)
      await ds.query(
        `INSERT INTO job_runs (id, job_id, user_id, due_at, attempt, status, session_id, runner, heartbeat_at,
           kill_requested_at, started_at, completed_at, final_response, error, delivered_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
        [
          r.id,
          r.job_id,
          r.user_id,
          r.due_at,
          r.attempt,
          r.status,
          r.session_id,
          r.runner,
          r.heartbeat_at,
          r.kill_requested_at,
          r.started_at,
          r.completed_at,
          r.final_response,
          r.error,
          r.delivered_at,
        ],
      );
  }

  /** A row with its heartbeat reduced to "written by this sweep" (now() differs per statement). */
  const norm = (base: number) => (r: RunRow & { heartbeat_at?: Date | null }) => ({
    ...r,
    heartbeat_at: r.heartbeat_at && r.heartbeat_at.getTime() >= base ? 'beaten now' : r.heartbeat_at,
  });

  const tableOf = (ds: DataSource, base: number) =>
    queryRows<RunRow & { heartbeat_at: Date | null }>(ds, `SELECT * FROM job_runs ORDER BY id`).then((rs) =>
      rs.map(norm(base)),
    );

  it('same runs heartbeaten and adopted, same open runs, undelivered runs and run-less async jobs; the wake-up is the earliest deadline', async () => {
    await fc.assert(
      fc.asyncProperty(stateSpec, async (state) => {
        const [{ now }] = await queryRows<{ now: Date }>(admin, `SELECT clock_timestamp() AS now`);
        const base = now.getTime();
        const rows = rowsOf(state, base);
        await load(db.old, rows);
        await load(db.one, rows);

        await legacy.heartbeatAndAdopt(db.old, ME, STALE_MS);
        const oldMine = await legacy.openRunsOf(db.old, ME);
        const oldUndelivered = await legacy.undelivered(db.old, state.limits.undelivered);
        const oldOrphans = await legacy.asyncWithoutRun(db.old, 5_000);

        const swept = await new JobsRepository(db.one).sweep(ME, STALE_MS, {
          undelivered: state.limits.undelivered,
          orphans: 50,
        });
        const elapsed = Date.now() - base; // the base is Postgres' clock, on this machine

        expect(swept.mine.map(norm(base))).toEqual(oldMine.map(norm(base)));
        expect(swept.undelivered.map(norm(base))).toEqual(oldUndelivered.map(norm(base)));
        const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
        expect([...swept.orphans].sort(byId)).toEqual(
          oldOrphans.map((o) => ({ id: o.id, created_at: o.created_at })).sort(byId),
        );
        expect(await tableOf(db.one, base)).toEqual(await tableOf(db.old, base));
        // adopted = the rows the old takeover moved to this runner (attempt + 1)
        const before = new Map(rows.runs.map((r) => [r.id as string, r]));
        expect([...swept.adopted].sort()).toEqual(
          oldMine
            .filter((r) => before.get(r.id)!.runner !== ME)
            .map((r) => r.id)
            .sort(),
        );

        // the wake-up: the earliest time something becomes due by time alone, on the base's clock
        const deadlines: number[] = [];
        for (const r of rows.runs) {
          const hb = r.heartbeat_at as Date | null;
          if ((r.status === 'starting' || r.status === 'running') && r.runner !== ME && hb)
            deadlines.push(hb.getTime() + STALE_MS);
          if (r.completed_at && !r.delivered_at) deadlines.push((r.completed_at as Date).getTime() + 2_000);
        }
        for (const j of rows.jobs)
          if (j.kind === 'async' && !rows.runs.some((r) => r.job_id === j.id))
            deadlines.push((j.created_at as Date).getTime() + 5_000);
        if (deadlines.length === 0) expect(swept.wakeInMs).toBeNull();
        else {
          const expected = Math.min(...deadlines) - base;
          expect(swept.wakeInMs).not.toBeNull();
          // measured from the statement's now(), a little after the base
          expect(swept.wakeInMs!).toBeLessThanOrEqual(expected + 1);
          expect(swept.wakeInMs!).toBeGreaterThanOrEqual(expected - elapsed - 50);
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('an empty scheduler: nothing found, nothing to wake for', async () => {
    await load(db.one, { jobs: [], runs: [] });
    expect(await new JobsRepository(db.one).sweep(ME, STALE_MS)).toEqual({
      mine: [],
      adopted: [],
      undelivered: [],
      orphans: [],
      wakeInMs: null,
    });
  });

  it('two replicas sweeping at once adopt a silent run exactly once (attempt + 1 once)', async () => {
    const a = new JobsRepository(db.one);
    const b = new JobsRepository(db.one);
    for (let i = 0; i < 25; i++) {
      const [{ now }] = await queryRows<{ now: Date }>(admin, `SELECT clock_timestamp() AS now`);
      const rows = rowsOf(
        {
          jobs: Array.from({ length: 3 }, () => ({
            kind: 'cron' as const,
            createdAge: 60_000,
            runs: [
              {
                open: true,
                openStatus: 'running' as const,
                endStatus: 'failed' as const,
                runner: 'dead',
                heartbeatAge: STALE_MS + 5_000,
                completedAge: 0,
                delivered: false,
                killRequested: false,
                withSession: true,
                attempt: 1,
                text: null,
              },
            ],
          })),
        },
        now.getTime(),
      );
      await load(db.one, rows);
      const [ra, rb] = await Promise.all([a.sweep('replica-a', STALE_MS), b.sweep('replica-b', STALE_MS)]);
      const adopted = [...ra.adopted, ...rb.adopted].sort();
      expect(adopted).toEqual(rows.runs.map((r) => r.id as string).sort());
      const table = await queryRows<{ id: string; runner: string; attempt: number }>(
        db.one,
        `SELECT id, runner, attempt FROM job_runs`,
      );
      for (const r of table) {
        expect(r.attempt).toBe(2);
        expect(r.runner).toBe(ra.adopted.includes(r.id) ? 'replica-a' : 'replica-b');
      }
      // what each reports as its own is exactly what it adopted
      expect(ra.mine.map((r) => r.id).sort()).toEqual([...ra.adopted].sort());
      expect(rb.mine.map((r) => r.id).sort()).toEqual([...rb.adopted].sort());
    }
  });

  it('a runner whose own heartbeat went stale keeps its runs: heartbeaten, not adopted by itself', async () => {
    const [{ now }] = await queryRows<{ now: Date }>(admin, `SELECT clock_timestamp() AS now`);
    const rows = rowsOf(
      {
        jobs: [
          {
            kind: 'async',
            createdAge: 60_000,
            runs: [
              {
                open: true,
                openStatus: 'starting',
                endStatus: 'failed',
                runner: ME,
                heartbeatAge: STALE_MS * 4,
                completedAge: 0,
                delivered: false,
                killRequested: false,
                withSession: false,
                attempt: 3,
                text: null,
              },
            ],
          },
        ],
      },
      now.getTime(),
    );
    await load(db.one, rows);
    const swept = await new JobsRepository(db.one).sweep(ME, STALE_MS);
    expect(swept.adopted).toEqual([]);
    expect(swept.mine).toEqual([expect.objectContaining({ id: rows.runs[0].id, attempt: 3, runner: ME })]);
    expect(swept.mine[0].started_at).toEqual(rows.runs[0].started_at);
  });

  it('timestamps from to_jsonb become the Dates the pg driver makes (microseconds truncated, any offset)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 4_102_444_800_000_000 }),
        fc.constantFrom('UTC', 'Europe/Berlin', 'Asia/Kolkata', 'America/St_Johns', 'Africa/Monrovia'),
        async (micros, zone) => {
          const [row] = await queryRows<{ d: Date; j: string }>(
            admin,
            `SELECT x AS d, to_jsonb(x) #>> '{}' AS j FROM (SELECT to_timestamp($1::numeric / 1000000) AS x) t`,
            [String(micros)],
          );
          await admin.query(`SET TIME ZONE '${zone}'`);
          try {
            const [inZone] = await queryRows<{ j: string }>(
              admin,
              `SELECT to_jsonb(to_timestamp($1::numeric / 1000000)) #>> '{}' AS j`,
              [String(micros)],
            );
            expect(timestampFromJson(inZone.j).getTime()).toBe(row.d.getTime());
          } finally {
            await admin.query(`SET TIME ZONE 'UTC'`);
          }
          expect(timestampFromJson(row.j).getTime()).toBe(row.d.getTime());
        },
      ),
      { seed: SEED, numRuns: 200 },
    );
    expect(() => timestampFromJson('yesterday')).toThrow(/not a timestamptz/);
  });
});

/**
 * The watcher's timing with the one-statement sweep: an idle engine sweeps once per safety
 * interval (not every pollMs), a chat's doorbell costs nothing, and the latencies the five
 * statements gave — a silent runner's run adopted right after `staleMs`, an undelivered ending
 * redelivered 2 s after it ended, an own run's ending handled at its doorbell or at the next poll
 * when the doorbell is missed — still hold.
 */
describe('JobEngine watcher: an idle scheduler costs one statement per safety interval', () => {
  const schema = `sweep_engine_${process.pid}`;
  let admin: DataSource;
  let ds: DataSource;
  let redis: PrivateRedis;
  const engines: JobEngine[] = [];
  const conns: Redis[] = [];
  const log = pino({ level: 'silent' });

  class CountingRepository extends JobsRepository {
    sweeps = 0;
    override sweep(...args: Parameters<JobsRepository['sweep']>) {
      this.sweeps += 1;
      return super.sweep(...args);
    }
  }

  class Sessions implements JobSessionsPort {
    endings = new Map<string, JobSessionStatusReply>();
    deliveries: string[] = [];
    start(r: Parameters<JobSessionsPort['start']>[0]) {
      return Promise.resolve({ sessionId: r.runId });
    }
    status(_a: Actor, sessionId: string) {
      return Promise.resolve(this.endings.get(sessionId) ?? ({ state: 'running' } as const));
    }
    deliver(r: Parameters<JobSessionsPort['deliver']>[0]) {
      if (!this.deliveries.includes(r.deliveryId)) this.deliveries.push(r.deliveryId);
      return Promise.resolve();
    }
    cancel() {
      return Promise.resolve();
    }
  }

  const engine = async (repo: JobsRepository, sessions: JobSessionsPort, opts: { pollMs: number; staleMs: number }) => {
    const e = new JobEngine(
      repo,
      sessions,
      { taskUpdate: () => undefined, notification: () => undefined },
      { homeSource: () => Promise.resolve('web') },
      () => {
        const c = new Redis(redis.url, { maxRetriesPerRequest: null });
        c.on('error', () => undefined);
        conns.push(c);
        return c;
      },
      {
        prefix: `sweep-${process.pid}-${Date.now()}`,
        runner: 'watcher',
        reconcileMs: 600_000,
        concurrency: 2,
        ...opts,
      },
      log,
      { standing: () => Promise.resolve({ standing: 'active', role: 'user' }) },
    );
    engines.push(e);
    await e.start();
    return e;
  };

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  async function until<T>(fn: () => Promise<T | null | undefined | false>, timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await fn();
      if (v) return v;
      if (Date.now() > deadline) throw new Error('timed out');
      await sleep(25);
    }
  }

  const newJob = async (kind: 'cron' | 'async' = 'cron') => {
    const id = randomUUID();
    await ds.query(
      `INSERT INTO scheduled_jobs (id, user_id, kind, title, agent_id, prompt, cron, enabled, parent_session_id, parent_tool_call_id)
       VALUES ($1, $2, $3, 't', 'main', 'p', '0 0 1 1 *', false, $4, 'call')`,
      [id, randomUUID(), kind, randomUUID()],
    );
    return id;
  };
  const runRow = (runId: string) =>
    queryRows<{ runner: string; attempt: number; status: string; delivered_at: Date | null }>(
      ds,
      `SELECT runner, attempt, status, delivered_at FROM job_runs WHERE id = $1`,
      [runId],
    ).then((r) => r[0]);

  beforeAll(async () => {
    admin = new DataSource({ type: 'postgres', url: DATABASE_URL, extra: { max: 1 } });
    await admin.initialize();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.query(`CREATE TABLE ${schema}.scheduled_jobs (LIKE public.scheduled_jobs INCLUDING ALL)`);
    await admin.query(`CREATE TABLE ${schema}.job_runs (LIKE public.job_runs INCLUDING ALL)`);
    ds = new DataSource({
      type: 'postgres',
      url: DATABASE_URL,
      extra: { max: 4, options: `-c search_path=${schema}` },
    });
    await ds.initialize();
    redis = await PrivateRedis.start();
  });

  afterEach(async () => {
    for (const e of engines.splice(0)) await e.stop();
    await ds.query(`DELETE FROM job_runs`);
    await ds.query(`DELETE FROM scheduled_jobs`);
  });

  afterAll(async () => {
    for (const c of conns) c.disconnect();
    await redis?.destroy();
    await ds?.destroy();
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.destroy();
  });

  it('idle: one sweep per safety interval instead of one per poll; a chat turn’s doorbell sweeps nothing, a kill’s does', async () => {
    const repo = new CountingRepository(ds);
    const e = await engine(repo, new Sessions(), { pollMs: 100, staleMs: 15_000 });
    expect(e.idleSweepMs()).toBe(5_000);
    await until(() => Promise.resolve(repo.sweeps >= 1), 5_000);
    const first = repo.sweeps;
    for (let i = 0; i < 20; i++) e.ring(randomUUID()); // other sessions' turns ended
    await sleep(2_000);
    // the five statements ran every 100 ms here: 20 sweeps, 100 statements
    expect(repo.sweeps).toBe(first);
    e.ring(); // a kill looks at once
    await until(() => Promise.resolve(repo.sweeps === first + 1), 2_000);
    await sleep(5_500);
    // ...and the safety sweep still comes, bounded by IDLE_SWEEP_MAX_MS
    expect(repo.sweeps).toBeGreaterThanOrEqual(first + 2);
    expect(repo.sweeps).toBeLessThanOrEqual(first + 3);
  });

  it("a silent runner's run appearing while idle is adopted right after staleMs, never before", async () => {
    const repo = new CountingRepository(ds);
    const staleMs = 1_500;
    const e = await engine(repo, new Sessions(), { pollMs: 100, staleMs });
    expect(e.idleSweepMs()).toBe(500);
    await until(() => Promise.resolve(repo.sweeps >= 1), 5_000);
    const jobId = await newJob();
    const runId = randomUUID();
    const [{ hb }] = await queryRows<{ hb: Date }>(
      ds,
      `INSERT INTO job_runs (id, job_id, user_id, due_at, status, runner, heartbeat_at)
       VALUES ($1, $2, $3, now(), 'running', 'dead', now()) RETURNING heartbeat_at AS hb`,
      [runId, jobId, randomUUID()],
    );
    const adopted = await until(async () => ((await runRow(runId))?.runner === 'watcher' ? Date.now() : null), 10_000);
    const latency = adopted - hb.getTime();
    expect(latency).toBeGreaterThanOrEqual(staleMs);
    // the sweep saw it within idleSweepMs and slept until its deadline: adopted within a poll of it
    expect(latency).toBeLessThan(staleMs + 1_000);
    expect((await runRow(runId))?.attempt).toBe(2);
  });

  it('an ending left undelivered (another replica crashed after the terminal write) is delivered 2 s after it ended', async () => {
    const sessions = new Sessions();
    const repo = new CountingRepository(ds);
    await engine(repo, sessions, { pollMs: 100, staleMs: 1_500 });
    await until(() => Promise.resolve(repo.sweeps >= 1), 5_000);
    const jobId = await newJob();
    const runId = randomUUID();
    const [{ done }] = await queryRows<{ done: Date }>(
      ds,
      `INSERT INTO job_runs (id, job_id, user_id, due_at, status, runner, completed_at, final_response)
       VALUES ($1, $2, $3, now(), 'succeeded', 'crashed', now(), 'the answer') RETURNING completed_at AS done`,
      [runId, jobId, randomUUID()],
    );
    const delivered = await until(async () => (await runRow(runId))?.delivered_at ?? null, 10_000);
    const latency = delivered.getTime() - done.getTime();
    expect(latency).toBeGreaterThanOrEqual(2_000);
    expect(latency).toBeLessThan(3_000);
    expect(sessions.deliveries).toEqual([runId]);
  });

  it("an own run's ending is handled at its doorbell; a missed doorbell delays it to the next poll, never loses it", async () => {
    const sessions = new Sessions();
    const repo = new CountingRepository(ds);
    const e = await engine(repo, sessions, { pollMs: 2_500, staleMs: 60_000 });
    const rung = await e.fire(await newJob(), new Date('2030-01-01T00:00:00Z'), true);
    const missed = await e.fire(await newJob(), new Date('2030-01-01T00:00:00Z'), true);
    await sleep(300);
    sessions.endings.set(rung!, { state: 'ended', ending: 'final', final_text: 'a' });
    const rangAt = Date.now();
    e.ring(rung!);
    await until(async () => (await runRow(rung!))?.delivered_at ?? null, 2_000);
    expect(Date.now() - rangAt).toBeLessThan(1_500);
    expect((await runRow(missed!))?.status).toBe('running');
    // the other run's doorbell never comes: the busy poll (every pollMs while runs are open) ends it
    sessions.endings.set(missed!, { state: 'ended', ending: 'final', final_text: 'b' });
    await until(async () => (await runRow(missed!))?.delivered_at ?? null, 6_000);
    expect(sessions.deliveries.sort()).toEqual([rung!, missed!].sort());
    expect((await runRow(missed!))?.status).toBe('succeeded');
  });
});
