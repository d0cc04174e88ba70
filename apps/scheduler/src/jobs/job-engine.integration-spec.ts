import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import pino from 'pino';
import { Registry } from 'prom-client';
import { DataSource } from 'typeorm';
import type { Actor, JobSessionStatusReply, UserStandingReply } from '@skald/contracts';
import { RemoteError } from '@skald/messaging/bus-errors';
import { queryRows } from '@skald/persistence/query-rows';
import { PrivateRedis } from '@skald/testing';
import { assertNoEviction, RedisEvictionPolicyError } from '../redis.provider';
import { JobEngine, QUEUE_NAME } from './job-engine';
import {
  HomeSourcePort,
  JobDeliveryTargetGone,
  JobEventsPort,
  JobOwnersPort,
  JobSessionsPort,
  JobStartRefused,
} from './job-ports';
import { JobsRepository } from './jobs.repository';
import { JobsService } from './jobs.service';
import { SchedulerMetrics } from './scheduler-metrics';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald_test';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = pino({ level: 'silent' });

async function until<T>(fn: () => Promise<T | null | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(200);
  }
}

/**
 * The session workers, as the scheduler sees them: every start and every delivery is recorded, so
 * a test can count how many agent sessions a fire started. A session ends when the test says so.
 */
class RecordingSessions implements JobSessionsPort {
  starts: string[] = [];
  kinds = new Map<string, string>();
  /** The actor each run's session was started as. */
  actors = new Map<string, Actor>();
  /** What each start named as the source of its policy. */
  policies = new Map<string, { parentSessionId: string | null; runContext: unknown }>();
  deliveries: Array<{ deliveryId: string; toolName: string; result: string; sessionId?: string; source?: string }> = [];
  cancelled: string[] = [];
  endings = new Map<string, JobSessionStatusReply>();
  /** How a session ends unless the test set its ending. */
  defaultEnding: JobSessionStatusReply | null = { state: 'ended', ending: 'final', final_text: 'done' };

  start(r: Parameters<JobSessionsPort['start']>[0]) {
    if (!this.starts.includes(r.runId)) this.starts.push(r.runId);
    this.kinds.set(r.runId, r.kind);
    this.actors.set(r.runId, r.actor);
    this.policies.set(r.runId, { parentSessionId: r.parentSessionId, runContext: r.runContext });
    return Promise.resolve({ sessionId: r.runId });
  }
  status(_a: Actor, sessionId: string) {
    return Promise.resolve(this.endings.get(sessionId) ?? this.defaultEnding ?? { state: 'running' as const });
  }
  deliver(r: Parameters<JobSessionsPort['deliver']>[0]) {
    if (!this.deliveries.some((d) => d.deliveryId === r.deliveryId)) this.deliveries.push(r);
    return Promise.resolve();
  }
  /** Cancels that find nothing to stop yet (the session's turn has not started: a /stop is a no-op). */
  cancelsTooEarly = 0;
  cancel(_a: Actor, sessionId: string) {
    this.cancelled.push(sessionId);
    if (this.cancelsTooEarly > 0) this.cancelsTooEarly--;
    else this.endings.set(sessionId, { state: 'ended', ending: 'cancelled', partial_output: 'half a summary' });
    return Promise.resolve();
  }
}

const taskUpdates: Array<Parameters<JobEventsPort['taskUpdate']>[1]> = [];
const events: JobEventsPort = { taskUpdate: (_u, e) => void taskUpdates.push(e), notification: () => undefined };

/** The session workers when the task's parent conversation was deleted before its fire. */
class ParentDeleted extends RecordingSessions {
  static readonly REASON = 'the conversation that started this task was deleted, so the task did not run';
  deliverTries = 0;
  override start(r: Parameters<JobSessionsPort['start']>[0]): Promise<{ sessionId: string }> {
    this.policies.set(r.runId, { parentSessionId: r.parentSessionId, runContext: r.runContext });
    return Promise.reject(new JobStartRefused(ParentDeleted.REASON));
  }
  override deliver(): Promise<void> {
    this.deliverTries++;
    return Promise.reject(new JobDeliveryTargetGone('session not found'));
  }
}
const home: HomeSourcePort = { homeSource: () => Promise.resolve('web') };

/** The gateway's users table as the scheduler asks it (`user.standing`): active users by default. */
class Owners implements JobOwnersPort {
  standings = new Map<string, UserStandingReply>();
  asked = 0;
  down = false;
  standing(userId: string): Promise<UserStandingReply> {
    this.asked++;
    if (this.down) return Promise.reject(new Error('no responders'));
    return Promise.resolve(this.standings.get(userId) ?? { standing: 'active', role: 'user' });
  }
}
const owners = new Owners();

describe('scheduler engine: Postgres is the truth, BullMQ mirrors it', () => {
  let ds: DataSource;
  let redis: PrivateRedis;
  let repo: JobsRepository;
  const engines: JobEngine[] = [];
  const conns: Redis[] = [];
  const prefix = `skald-it-${process.pid}-${Date.now()}`;

  const engine = async (
    sessions: JobSessionsPort,
    runner: string,
    opts: Partial<{ staleMs: number; reconcileMs: number; url: string; lockDurationMs: number }> = {},
  ) => {
    const e = new JobEngine(
      repo,
      sessions,
      events,
      home,
      () => {
        const c = new Redis(opts.url ?? redis.url, { maxRetriesPerRequest: null });
        c.on('error', () => undefined);
        conns.push(c);
        return c;
      },
      {
        prefix,
        runner,
        pollMs: 200,
        staleMs: opts.staleMs ?? 60_000,
        reconcileMs: opts.reconcileMs ?? 60_000,
        concurrency: 4,
        lockDurationMs: opts.lockDurationMs,
      },
      log,
      owners,
    );
    engines.push(e);
    await e.start();
    return e;
  };

  const runsOf = (jobId: string) =>
    queryRows<{ id: string; due_at: Date; status: string; runner: string; attempt: number; delivered_at: Date | null }>(
      ds,
      `SELECT id, due_at, status, runner, attempt, delivered_at FROM job_runs WHERE job_id = $1 ORDER BY due_at`,
      [jobId],
    );

  const created: string[] = [];
  const newCron = async (userId: string, cron: string, nextRunAt: Date | null = new Date()) => {
    const id = await repo.createCron({
      userId,
      role: 'user',
      title: 'Inbox summary',
      prompt: 'summarise my inbox',
      agentId: 'main',
      cron,
      timezone: 'UTC',
      enabled: true,
      runContext: {},
      nextRunAt,
    });
    created.push(id);
    return id;
  };

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: DATABASE_URL, extra: { max: 6 } });
    await ds.initialize();
    repo = new JobsRepository(ds);
    redis = await PrivateRedis.start();
  });

  afterEach(async () => {
    for (const e of engines.splice(0)) await e.stop();
    // each test's jobs are disabled so a later test's engines do not fire them
    await ds.query(`UPDATE scheduled_jobs SET enabled = false WHERE id = ANY($1)`, [created]);
  });

  afterAll(async () => {
    for (const c of conns) c.disconnect();
    await redis.destroy();
    await ds.destroy();
  });

  it('three replicas fire a schedule once per due time, each run delivered once', async () => {
    const sessions = new RecordingSessions();
    const userId = randomUUID();
    const jobId = await newCron(userId, '*/2 * * * * *');
    await Promise.all([0, 1, 2].map((i) => engine(sessions, `replica-${i}`)));
    await sleep(9_000);
    const runs = await runsOf(jobId);
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(runs.length).toBeLessThanOrEqual(6);
    // every due time once, on the two-second grid
    const dues = runs.map((r) => r.due_at.getTime());
    expect(new Set(dues).size).toBe(dues.length);
    for (const d of dues) expect(d % 2000).toBe(0);
    // one agent session per run, never more
    const mine = sessions.starts.filter((s) => runs.some((r) => r.id === s));
    expect(mine.sort()).toEqual(runs.map((r) => r.id).sort());
    await sleep(1_000);
    const ended = (await runsOf(jobId)).filter((r) => r.status === 'succeeded');
    expect(ended.length).toBeGreaterThanOrEqual(3);
    expect(ended.every((r) => r.delivered_at !== null)).toBe(true);
    const delivered = sessions.deliveries.filter((d) => runs.some((r) => r.id === d.deliveryId));
    expect(delivered.length).toBe(new Set(delivered.map((d) => d.deliveryId)).size);
    expect(delivered[0]).toMatchObject({ toolName: 'read_notification', source: 'web', result: 'done' });
  }, 60_000);

  it('a second delivery of the same fire (a stalled-job retry, another replica) starts no second session', async () => {
    const sessions = new RecordingSessions();
    sessions.defaultEnding = null; // the session keeps running
    const jobId = await newCron(randomUUID(), '0 0 1 1 *', null);
    const [a, b] = [await engine(sessions, 'r-a'), await engine(sessions, 'r-b')];
    const due = new Date('2027-01-01T00:00:00Z');
    const results = await Promise.all([a.fire(jobId, due, true), b.fire(jobId, due, true), a.fire(jobId, due, true)]);
    expect(results.filter((r) => r !== null)).toHaveLength(1);
    expect((await runsOf(jobId)).length).toBe(1);
    expect(sessions.starts.filter((s) => s === results.find((r) => r))).toHaveLength(1);
    // and a fire of a later due time while the run is still open is skipped
    expect(await b.fire(jobId, new Date('2027-01-02T00:00:00Z'), true)).toBeNull();
    expect((await runsOf(jobId)).length).toBe(1);
  }, 30_000);

  it('a scheduler killed while BullMQ still holds the fire: the stalled-job retry starts no second session', async () => {
    // The dying replica fences the fire, then hangs before its session starts and dies with the
    // BullMQ job still active; the survivor's stalled-job check hands the job out again.
    const hanging: JobSessionsPort = {
      start: () => new Promise(() => undefined),
      status: () => Promise.resolve({ state: 'running' }),
      deliver: () => Promise.resolve(),
      cancel: () => Promise.resolve(),
    };
    const sessions = new RecordingSessions();
    const jobId = await newCron(randomUUID(), '0 0 1 1 *', null);
    const dying = await engine(hanging, 'dying', { staleMs: 1_500, lockDurationMs: 1_500 });
    const due = new Date('2027-01-01T00:00:00Z');
    await dying.enqueue(jobId, due, true);
    const [fenced] = await until(async () => {
      const r = await runsOf(jobId);
      return r.length > 0 ? r : null;
    });
    expect(fenced).toMatchObject({ runner: 'dying', status: 'starting' });
    await dying.abandon();
    const survivor = await engine(sessions, 'survivor-2', { staleMs: 1_500, lockDurationMs: 1_500 });
    const retried = jest.fn();
    (survivor as unknown as { worker: { on(e: string, f: () => void): void } }).worker.on('completed', retried);
    await until(() => Promise.resolve(retried.mock.calls.length > 0));
    await until(async () => (await runsOf(jobId))[0]?.delivered_at ?? null);
    const runs = await runsOf(jobId);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ id: fenced.id, status: 'succeeded', runner: 'survivor-2' });
    // the adopter (re)started the same idempotent session once; the retried fire started nothing
    expect(sessions.starts).toEqual([fenced.id]);
  }, 90_000);

  it('a run whose scheduler died is adopted by another replica and delivered once', async () => {
    const sessions = new RecordingSessions();
    sessions.defaultEnding = null;
    const jobId = await newCron(randomUUID(), '0 0 1 1 *', null);
    const dead = await engine(sessions, 'dead-one', { staleMs: 1_000 });
    const runId = await dead.fire(jobId, new Date('2027-01-01T00:00:00Z'), true);
    expect(runId).not.toBeNull();
    await dead.stop(); // no heartbeat any more, as after kill -9
    await engine(sessions, 'survivor', { staleMs: 1_000 });
    await sleep(2_500);
    sessions.endings.set(runId!, {
      state: 'ended',
      ending: 'failed',
      error: 'tool round limit exceeded',
      partial_output: 'two of five',
    });
    await sleep(1_500);
    const [run] = await runsOf(jobId);
    expect(run).toMatchObject({ status: 'failed', runner: 'survivor' });
    expect(run.attempt).toBeGreaterThanOrEqual(2);
    expect(sessions.starts.filter((s) => s === runId)).toHaveLength(1);
    expect(sessions.deliveries.filter((d) => d.deliveryId === runId)).toEqual([
      expect.objectContaining({
        result:
          'The task "Inbox summary" failed: tool round limit exceeded. Partial output before it ended:\ntwo of five',
      }),
    ]);
  }, 30_000);

  it('a fire missed during downtime runs once afterwards, never a burst', async () => {
    const sessions = new RecordingSessions();
    // The window below must not cross a minute boundary: the next minute's own fire would be a
    // second, rightful run.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 55_000) await sleep(60_000 - intoMinute + 200);
    // every minute, last looked at two hours ago: 120 fires missed
    const jobId = await newCron(randomUUID(), '* * * * *', new Date(Date.now() - 2 * 3600_000));
    await Promise.all([engine(sessions, 'c-0'), engine(sessions, 'c-1')]);
    await sleep(2_000);
    const runs = await runsOf(jobId);
    expect(runs.length).toBe(1);
    expect(Date.now() - runs[0].due_at.getTime()).toBeLessThan(61_000);
    const [job] = await queryRows<{ next_run_at: Date }>(ds, `SELECT next_run_at FROM scheduled_jobs WHERE id = $1`, [
      jobId,
    ]);
    expect(job.next_run_at.getTime()).toBeGreaterThan(Date.now());
  }, 30_000);

  it('Redis flushed mid-schedule: the mirror is rebuilt from the table, no due time runs twice', async () => {
    const sessions = new RecordingSessions();
    const jobId = await newCron(randomUUID(), '*/2 * * * * *');
    await Promise.all([0, 1, 2].map((i) => engine(sessions, `f-${i}`, { reconcileMs: 700 })));
    await sleep(4_500);
    const before = (await runsOf(jobId)).length;
    expect(before).toBeGreaterThanOrEqual(1);
    const admin = new Redis(redis.url);
    await admin.flushall();
    const flushedAt = Date.now();
    admin.disconnect();
    await sleep(8_000);
    const runs = await runsOf(jobId);
    const dues = runs.map((r) => r.due_at.getTime());
    expect(new Set(dues).size).toBe(dues.length);
    const after = runs.filter((r) => r.due_at.getTime() > flushedAt);
    // firing resumed on the grid after the flush, and no burst: at most one run per 2 s slot
    expect(after.length).toBeGreaterThanOrEqual(2);
    expect(after.length).toBeLessThanOrEqual(5);
    expect(sessions.starts.filter((s) => runs.some((r) => r.id === s))).toHaveLength(runs.length);
  }, 60_000);

  it('Redis restarted empty: the reconnect alone rebuilds the mirror and the schedule fires again', async () => {
    const own = await PrivateRedis.start();
    try {
      const sessions = new RecordingSessions();
      const jobId = await newCron(randomUUID(), '*/2 * * * * *');
      // no periodic reconcile within the test: only the reconnect can rebuild it
      await engine(sessions, 'rc-0', { url: own.url, reconcileMs: 600_000 });
      await sleep(3_000);
      expect((await runsOf(jobId)).length).toBeGreaterThanOrEqual(1);
      await own.kill();
      await sleep(500);
      await own.start();
      const restartedAt = Date.now();
      await sleep(7_000);
      const runs = await runsOf(jobId);
      expect(runs.filter((r) => r.due_at.getTime() > restartedAt).length).toBeGreaterThanOrEqual(2);
      const dues = runs.map((r) => r.due_at.getTime());
      expect(new Set(dues).size).toBe(dues.length);
    } finally {
      for (const e of engines.splice(0)) await e.stop();
      await own.destroy();
    }
  }, 60_000);

  it('kill cancels the running session through /stop and records the partial output', async () => {
    const sessions = new RecordingSessions();
    sessions.defaultEnding = null;
    const actor: Actor = { userId: randomUUID(), role: 'user' };
    const e = await engine(sessions, 'k-0');
    const service = new JobsService(repo, e, sessions, { minIntervalS: 60, maxAsyncPerUser: 5, ticCron: null });
    const { id } = await service.create(actor, {
      title: 'Long job',
      prompt: 'go',
      cron: '0 7 * * *',
      timezone: 'Europe/Berlin',
    });
    created.push(id);
    const { run_id } = await service.runNow(actor, id);
    await sleep(500);
    // another user cannot kill it
    await expect(service.kill({ userId: randomUUID(), role: 'user' }, id)).rejects.toBeInstanceOf(RemoteError);
    expect(await service.kill(actor, id)).toEqual({ killed: true });
    expect(sessions.cancelled).toEqual([run_id]);
    await sleep(1_000);
    const { items } = await service.runs(actor, id);
    expect(items).toEqual([expect.objectContaining({ id: run_id, status: 'cancelled', error: 'cancelled' })]);
    const [row] = await runsOf(id);
    expect(row.delivered_at).not.toBeNull();
    const listed = await service.list(actor);
    expect(listed.items[0]).toMatchObject({ id, timezone: 'Europe/Berlin', enabled: true });
    expect(listed.items[0].next_run_at).not.toBeNull();
  }, 30_000);

  it('a kill that lands before the session has a turn to stop is asked again at each sweep until the session stops', async () => {
    const sessions = new RecordingSessions();
    sessions.defaultEnding = null;
    sessions.cancelsTooEarly = 2;
    const actor: Actor = { userId: randomUUID(), role: 'user' };
    const e = await engine(sessions, 'k-early');
    const service = new JobsService(repo, e, sessions, { minIntervalS: 60, maxAsyncPerUser: 5, ticCron: null });
    const { id } = await service.create(actor, { title: 'Early kill', prompt: 'go', cron: '0 7 * * *' });
    created.push(id);
    const { run_id } = await service.runNow(actor, id);
    await sleep(300);
    expect(await service.kill(actor, id)).toEqual({ killed: true });
    await sleep(2_000);
    // The kill's own cancel and the first sweep's found nothing to stop; a later sweep's did.
    expect(sessions.cancelled.filter((s) => s === run_id).length).toBeGreaterThanOrEqual(3);
    const { items } = await service.runs(actor, id);
    expect(items).toEqual([expect.objectContaining({ id: run_id, status: 'cancelled' })]);
  }, 30_000);

  it('async tasks: idempotent by the tool call id, capped per user with a clear error, always delivered to the parent', async () => {
    const sessions = new RecordingSessions();
    sessions.defaultEnding = null;
    const actor: Actor = { userId: randomUUID(), role: 'admin' };
    const e = await engine(sessions, 'a-0');
    const service = new JobsService(repo, e, sessions, { minIntervalS: 60, maxAsyncPerUser: 2, ticCron: null });
    const parent = randomUUID();
    const submit = (key: string) =>
      service.submitAsync(actor, {
        idempotencyKey: key,
        parentSessionId: parent,
        parentToolCallId: key,
        source: 'web',
        scratchpadSessionId: parent,
        agentId: 'researcher',
        prompt: 'research this',
        title: `task ${key}`,
        description: null,
        client: null,
      });
    const first = await submit('call-1');
    expect(await submit('call-2')).toMatchObject({ duplicate: false });
    await expect(submit('call-3')).rejects.toThrow(/already have 2 background tasks running \(the limit is 2\)/);
    // a repeated submit of a running task (a retried tool call) is not refused by the cap
    expect(await submit('call-1')).toEqual({ job_id: first.job_id, duplicate: true });
    await sleep(1_000);
    const strip = await service.tasks(actor, parent);
    expect(strip.items.map((t) => t.state)).toEqual(['running', 'running']);
    // the first ends by failure: it reaches the parent as a completed task_completed with prose
    const [run] = await queryRows<{ id: string }>(ds, `SELECT id FROM job_runs WHERE job_id = $1`, [first.job_id]);
    sessions.endings.set(run.id, { state: 'ended', ending: 'failed', error: 'the LLM failed' });
    await sleep(1_000);
    expect(sessions.deliveries).toEqual([
      expect.objectContaining({
        deliveryId: run.id,
        sessionId: parent,
        toolName: 'task_completed',
        result: 'The task "task call-1" failed: the LLM failed. It produced no output before it ended.',
      }),
    ]);
    const after = await service.tasks(actor, parent);
    expect(after.items.find((t) => t.job_id === first.job_id)).toMatchObject({
      state: 'failed',
      error: 'the LLM failed',
    });
  }, 30_000);

  it('parallel async submits cannot pass the per-user cap together', async () => {
    const sessions = new RecordingSessions();
    sessions.defaultEnding = null;
    const actor: Actor = { userId: randomUUID(), role: 'user' };
    const e = await engine(sessions, 'p-0');
    const service = new JobsService(repo, e, sessions, { minIntervalS: 60, maxAsyncPerUser: 3, ticCron: null });
    const parent = randomUUID();
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        service.submitAsync(actor, {
          idempotencyKey: `par-${i}`,
          parentSessionId: parent,
          parentToolCallId: `par-${i}`,
          source: 'web',
          scratchpadSessionId: parent,
          agentId: 'researcher',
          prompt: 'in parallel',
          title: null,
          description: null,
          client: null,
        }),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(5);
  }, 30_000);

  it('tic: run now through the same job path, one at a time, reported to no chat', async () => {
    const sessions = new RecordingSessions();
    sessions.defaultEnding = null;
    const actor: Actor = { userId: randomUUID(), role: 'admin' };
    const e = await engine(sessions, 't-0');
    const service = new JobsService(repo, e, sessions, { minIntervalS: 60, maxAsyncPerUser: 5, ticCron: null });
    const { run_id } = await service.ticTrigger(actor);
    expect(sessions.kinds.get(run_id)).toBe('tic');
    await expect(service.ticTrigger(actor)).rejects.toThrow(/already running/);
    sessions.endings.set(run_id, { state: 'ended', ending: 'final', final_text: 'nothing due' });
    await sleep(1_000);
    const [run] = await queryRows<{ status: string; delivered_at: Date | null }>(
      ds,
      `SELECT status, delivered_at FROM job_runs WHERE id = $1`,
      [run_id],
    );
    expect(run).toMatchObject({ status: 'succeeded' });
    expect(run.delivered_at).not.toBeNull();
    expect(sessions.deliveries.filter((d) => d.deliveryId === run_id)).toEqual([]);
    // the next tick is a new run of the same job
    const next = await service.ticTrigger(actor);
    expect(next.run_id).not.toBe(run_id);
  }, 30_000);

  it("/metrics shows a schedule's next fire as a delayed job of the queue, and drops it when the schedule is disabled", async () => {
    const e = await engine(new RecordingSessions(), 'm-0');
    const registry = new Registry();
    new SchedulerMetrics(registry).observeQueue(QUEUE_NAME, () => e.jobCounts());
    const sample = async (state: string) => {
      const line = (await registry.metrics())
        .split('\n')
        .find((l) => l.startsWith(`skald_scheduler_queue_jobs{queue="${QUEUE_NAME}",state="${state}"} `));
      return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
    };
    const before = await sample('delayed');
    expect(before).toEqual(expect.any(Number));
    expect(await sample('waiting')).toEqual(expect.any(Number));
    const jobId = await newCron(randomUUID(), '0 0 1 1 *', null);
    await e.reconcile();
    expect(await sample('delayed')).toBe(before! + 1);
    await ds.query(`UPDATE scheduled_jobs SET enabled = false WHERE id = $1`, [jobId]);
    await e.reconcile();
    expect(await sample('delayed')).toBe(before);
  }, 30_000);

  it("every fire re-reads its owner: a disabled owner's fire is recorded refused with the reason, a demoted admin's runs as user", async () => {
    const sessions = new RecordingSessions();
    sessions.defaultEnding = null;
    const userId = randomUUID();
    const e = await engine(sessions, 'owner-0');
    const service = new JobsService(repo, e, sessions, { minIntervalS: 60, maxAsyncPerUser: 5, ticCron: null });
    // made by an admin: the role at creation is 'admin'
    const admin: Actor = { userId, role: 'admin' };
    const { id: jobId } = await service.create(admin, {
      title: 'nightly',
      prompt: 'write the notes',
      cron: '0 3 * * *',
    });
    created.push(jobId);
    const { id: groupJob } = await service.create(admin, {
      title: 'ops',
      prompt: 'deploy',
      cron: '0 4 * * *',
      run_context: { security_group: 'ops' },
    });
    created.push(groupJob);

    // 1. the owner is disabled: the fire is fenced, refused with the reason, no session, nothing delivered
    owners.standings.set(userId, { standing: 'disabled', role: 'admin' });
    const refused = await e.fire(jobId, new Date('2027-02-01T03:00:00Z'));
    expect(refused).not.toBeNull();
    expect(sessions.starts).not.toContain(refused);
    const runs = await service.runs(admin, jobId);
    expect(runs.items).toEqual([
      expect.objectContaining({ id: refused, status: 'refused', error: "refused: the job's owner is disabled" }),
    ]);
    expect((await runsOf(jobId))[0].delivered_at).not.toBeNull();

    // 2. a deleted owner likewise
    owners.standings.set(userId, { standing: 'deleted', role: null });
    const gone = await e.fire(jobId, new Date('2027-02-02T03:00:00Z'));
    expect((await service.runs(admin, jobId)).items.find((r) => r.id === gone)).toMatchObject({
      status: 'refused',
      error: "refused: the job's owner no longer exists",
    });

    // 3. demoted to user: the session starts as 'user', and the job's role follows
    owners.standings.set(userId, { standing: 'active', role: 'user' });
    const demoted = await e.fire(jobId, new Date('2027-02-03T03:00:00Z'));
    expect(demoted).not.toBeNull();
    expect(sessions.actors.get(demoted!)).toEqual({ userId, role: 'user' });
    const [row] = await queryRows<{ owner_role: string }>(ds, `SELECT owner_role FROM scheduled_jobs WHERE id = $1`, [
      jobId,
    ]);
    expect(row.owner_role).toBe('user');

    // 4. the group an admin chose is not used by an owner who is no longer an admin
    const grouped = await e.fire(groupJob, new Date('2027-02-03T04:00:00Z'));
    expect(sessions.starts).not.toContain(grouped);
    expect((await service.runs(admin, groupJob)).items[0]).toMatchObject({
      status: 'refused',
      error:
        "refused: the job's run_context sets security_group, which only an admin sets, and its owner is no longer an admin",
    });

    // 5. promoted back: the group job runs again, as admin
    owners.standings.set(userId, { standing: 'active', role: 'admin' });
    const back = await e.fire(groupJob, new Date('2027-02-04T04:00:00Z'));
    expect(sessions.actors.get(back!)).toEqual({ userId, role: 'admin' });
    owners.standings.delete(userId);
  }, 30_000);

  it('a fire whose owner cannot be asked (no gateway) starts nothing until it can, then runs with the role read then', async () => {
    const sessions = new RecordingSessions();
    sessions.defaultEnding = null;
    const userId = randomUUID();
    const jobId = await newCron(userId, '0 0 1 1 *', null);
    const e = await engine(sessions, 'owner-1');
    owners.down = true;
    const runId = await e.fire(jobId, new Date('2027-03-01T00:00:00Z'), true);
    await sleep(1_000);
    expect(sessions.starts).not.toContain(runId);
    expect((await runsOf(jobId))[0].status).toBe('starting');
    owners.standings.set(userId, { standing: 'active', role: 'user' });
    owners.down = false;
    await until(async () => sessions.starts.includes(runId!), 10_000);
    expect(sessions.actors.get(runId!)).toEqual({ userId, role: 'user' });
    owners.standings.delete(userId);
  }, 30_000);

  it('an async task of a disabled owner is refused at its fire', async () => {
    const sessions = new RecordingSessions();
    const userId = randomUUID();
    const e = await engine(sessions, 'owner-2');
    const service = new JobsService(repo, e, sessions, { minIntervalS: 60, maxAsyncPerUser: 5, ticCron: null });
    owners.standings.set(userId, { standing: 'disabled', role: 'user' });
    const parent = randomUUID();
    const { job_id } = await service.submitAsync(
      { userId, role: 'user' },
      {
        idempotencyKey: 'k',
        parentSessionId: parent,
        parentToolCallId: 'k',
        source: 'web',
        scratchpadSessionId: parent,
        agentId: 'researcher',
        prompt: 'research this',
        title: 'task',
        description: null,
        client: null,
      },
    );
    const [run] = await until(async () => {
      const r = await queryRows<{ status: string; error: string }>(
        ds,
        `SELECT status, error FROM job_runs WHERE job_id = $1`,
        [job_id],
      );
      return r.length > 0 && r[0].status !== 'starting' ? r : null;
    }, 10_000);
    expect(run).toEqual({ status: 'refused', error: "refused: the job's owner is disabled" });
    expect(sessions.starts).toEqual([]);
    owners.standings.delete(userId);
  }, 30_000);

  const submitTask = (service: JobsService, userId: string, parent: string) =>
    service.submitAsync(
      { userId, role: 'user' },
      {
        idempotencyKey: randomUUID(),
        parentSessionId: parent,
        parentToolCallId: 'k',
        source: 'web',
        scratchpadSessionId: parent,
        agentId: 'researcher',
        prompt: 'research this',
        title: 'task',
        description: null,
        client: null,
      },
    );

  it("an async task's start names its parent as the source of its policy, never a RunContext of its own", async () => {
    const sessions = new RecordingSessions();
    const userId = randomUUID();
    const e = await engine(sessions, 'policy-1');
    const service = new JobsService(repo, e, sessions, { minIntervalS: 60, maxAsyncPerUser: 5, ticCron: null });
    const parent = randomUUID();
    const { job_id } = await submitTask(service, userId, parent);
    const [run] = await until(async () => {
      const r = await queryRows<{ id: string }>(ds, `SELECT id FROM job_runs WHERE job_id = $1`, [job_id]);
      return r.length > 0 && sessions.starts.includes(r[0].id) ? r : null;
    }, 10_000);
    expect(sessions.policies.get(run.id)).toEqual({ parentSessionId: parent, runContext: {} });
  }, 30_000);

  it('an async task whose parent was deleted before its fire ends failed with the reason, told once, retried never', async () => {
    const sessions = new ParentDeleted();
    const userId = randomUUID();
    const e = await engine(sessions, 'policy-2');
    const service = new JobsService(repo, e, sessions, { minIntervalS: 60, maxAsyncPerUser: 5, ticCron: null });
    const parent = randomUUID();
    const { job_id } = await submitTask(service, userId, parent);
    const [run] = await until(async () => {
      const r = await queryRows<{ status: string; error: string; session_id: string | null; delivered: boolean }>(
        ds,
        `SELECT status, error, session_id, delivered_at IS NOT NULL AS delivered FROM job_runs WHERE job_id = $1`,
        [job_id],
      );
      return r.length > 0 && r[0].delivered ? r : null;
    }, 10_000);
    expect(run).toEqual({ status: 'failed', error: ParentDeleted.REASON, session_id: null, delivered: true });
    expect(sessions.starts).toEqual([]);
    const told = () => taskUpdates.filter((t) => t.job_id === job_id);
    expect(told()).toEqual([
      { job_id, title: 'task', agent_id: 'researcher', state: 'failed', error: ParentDeleted.REASON, source: 'web' },
    ]);
    // nothing is retried: one delivery try (there is no conversation to deliver into), one task_update
    await sleep(1_500);
    expect(sessions.deliverTries).toBe(1);
    expect(told()).toHaveLength(1);
  }, 30_000);

  it('cron create and update refuse a RunContext field only an admin sets, naming it, for a non-admin', async () => {
    const sessions = new RecordingSessions();
    const e = await engine(sessions, 'owner-3');
    const service = new JobsService(repo, e, sessions, { minIntervalS: 60, maxAsyncPerUser: 5, ticCron: null });
    const user: Actor = { userId: randomUUID(), role: 'user' };
    const input = { title: 't', prompt: 'p', cron: '0 3 * * *', run_context: { security_group: 'ops' } };
    await expect(service.create(user, input)).rejects.toMatchObject({
      body: { code: 'forbidden', field: 'run_context.security_group' },
    });
    const { id } = await service.create(user, { ...input, run_context: { allow_fs_reads: ['/workspace/docs'] } });
    created.push(id);
    await expect(service.update(user, id, { run_context: { security_group: 'ops' } })).rejects.toMatchObject({
      body: { code: 'forbidden', field: 'run_context.security_group' },
    });
    const [row] = await queryRows<{ run_context: unknown }>(
      ds,
      `SELECT run_context FROM scheduled_jobs WHERE id = $1`,
      [id],
    );
    expect(row.run_context).toEqual({ allow_fs_reads: ['/workspace/docs'] });
  }, 30_000);

  it('refuses a Redis whose eviction policy is not noeviction', async () => {
    const other = await PrivateRedis.start();
    const c = new Redis(other.url);
    try {
      await expect(assertNoEviction(c)).resolves.toBeUndefined();
      await c.config('SET', 'maxmemory-policy', 'allkeys-lru');
      await expect(assertNoEviction(c)).rejects.toBeInstanceOf(RedisEvictionPolicyError);
      await expect(assertNoEviction(c)).rejects.toThrow(/allkeys-lru/);
    } finally {
      c.disconnect();
      await other.destroy();
    }
  }, 30_000);
});
