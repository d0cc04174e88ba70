// Size: one class over one BullMQ queue; its mirror, runner and watcher (a section each below)
// share its state (the runs it holds, its sweep timer, the fires it fenced during a sweep).
import { Job, Queue, Worker } from 'bullmq';
import type Redis from 'ioredis';
import { adminOnlyRunContextField, SCHEDULER_QUEUE, type Actor, type UserStandingReply } from '@skald/contracts';
import type { Logger } from '@skald/service-kit';
import { lastFireAtOrBefore, nextFire } from './cron-spec';
import { classifyEnding, endingInputOf, notificationSummary, type JobEndingInput } from './job-ending';
import {
  HomeSourcePort,
  JobDeliveryTargetGone,
  JobEventsPort,
  JobOwnersPort,
  JobSessionsPort,
  JobStartRefused,
} from './job-ports';
import type { JobNotifyPort } from './job-ports';
import { JobRow, RunRow } from './job-rows';
import { JobsRepository } from './jobs.repository';
import { QUEUE_STATES, type QueueCounts } from './scheduler-metrics';

export const QUEUE_NAME = SCHEDULER_QUEUE;
const FIRE = 'fire';

export interface EngineOptions {
  /** BullMQ key prefix (one per deployment; tests use one per run). */
  prefix: string;
  runner: string;
  pollMs: number;
  staleMs: number;
  reconcileMs: number;
  concurrency: number;
  /** BullMQ's lock of an active job (a dead worker's job is retried after it); default 30 s. */
  lockDurationMs?: number;
}

interface FireData {
  job_id: string;
  /** Set for run-now, catch-up and async fires; a scheduler's fire takes its due time from BullMQ. */
  due_at?: string;
  manual?: boolean;
}

const schedulerId = (jobId: string) => `job-${jobId}`;

/** The longest an idle watcher waits between two sweeps (the safety sweep, for missed doorbells). */
export const IDLE_SWEEP_MAX_MS = 5_000;
/** Woken at a deadline, the sweep runs this much after it (so the row is past its threshold). */
const DEADLINE_SLACK_MS = 20;

/**
 * BullMQ mirrors `scheduled_jobs`; `job_runs` is the truth of every fire.
 * - Mirror: one job scheduler per enabled cron / tic job (pattern + timezone), reconciled from the
 *   table on start, on every Redis (re)connect and periodically (so a flushed Redis is rebuilt).
 * - Runner: a BullMQ worker that fences the fire in Postgres (UNIQUE job_id, due_at) before it
 *   starts the job's session on a session worker — a second delivery of the same fire, from a
 *   stalled-job retry or another replica, finds the row and starts nothing.
 * - Watcher: waits for each open run's ending (read from the session worker, which reads its own
 *   rows; NATS `turn_ended` is only the doorbell), classifies it once, writes the terminal status
 *   conditionally, and delivers it. Runs of a silent runner are adopted after `staleMs`.
 *   One statement per sweep (`JobsRepository.sweep`). While this runner holds open runs it sweeps
 *   every `pollMs` (heartbeat and status, as always); without any it sleeps until the earliest
 *   deadline the sweep reported (another runner's run going stale, an ended run's delivery
 *   overdue, a run-less async job old enough), at least `pollMs` and at most `idleSweepMs()`, so a
 *   run that appears meanwhile is seen before it can go stale. A `turn_ended` doorbell of one of
 *   its own sessions and a kill sweep at once, a fire it fenced puts it on the poll; a missed
 *   doorbell only delays.
 */
export class JobEngine {
  private queue!: Queue;
  private worker!: Worker;
  private timers: NodeJS.Timeout[] = [];
  private ticking = false;
  private tickAgain = false;
  private stopped = false;
  /** The next sweep's timer and when it fires (ms since the epoch). */
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweepAt = Infinity;
  /** Run and session ids of this runner's open runs, as of the last sweep and its own fires. */
  private mine = new Set<string>();
  /** Runs fenced since the running sweep began (its statement may have missed them). */
  private fencedDuringSweep = new Set<string>();

  constructor(
    private readonly jobs: JobsRepository,
    private readonly sessions: JobSessionsPort,
    private readonly events: JobEventsPort,
    private readonly home: HomeSourcePort,
    private readonly connect: () => Redis,
    private readonly opts: EngineOptions,
    private readonly log: Logger,
    private readonly owners: JobOwnersPort,
    private readonly notify?: JobNotifyPort,
  ) {}

  async start(): Promise<void> {
    const queueConn = this.connect();
    this.queue = new Queue(QUEUE_NAME, { connection: queueConn, prefix: this.opts.prefix });
    this.queue.on('error', (e) => this.log.warn({ err: String(e) }, 'queue error'));
    // A reconnect may follow a Redis restart or flush: rebuild the mirror from the table.
    queueConn.on('ready', () => void this.reconcile().catch((e: unknown) => this.warn('reconcile failed', e)));
    this.worker = new Worker(QUEUE_NAME, (job: Job<FireData>) => this.process(job), {
      connection: this.connect(),
      prefix: this.opts.prefix,
      concurrency: this.opts.concurrency,
      // The fence makes a retry harmless; a stalled job is retried, never failed for good.
      maxStalledCount: 1_000,
      lockDuration: this.opts.lockDurationMs ?? 30_000,
      stalledInterval: this.opts.lockDurationMs ?? 30_000,
    });
    this.worker.on('error', (e) => this.log.warn({ err: String(e) }, 'worker error'));
    await this.reconcile();
    this.sweepIn(0);
    this.timers.push(
      setInterval(
        () => void this.reconcile().catch((e: unknown) => this.warn('reconcile failed', e)),
        this.opts.reconcileMs,
      ),
    );
    for (const t of this.timers) t.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.clearSweep();
    await this.worker?.close().catch(() => undefined);
    await this.queue?.close().catch(() => undefined);
  }

  /** Stops at once without draining or releasing anything, as a kill -9 would (crash tests). */
  async abandon(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.clearSweep();
    await this.worker?.close(true).catch(() => undefined);
    await this.queue?.close().catch(() => undefined);
  }

  /** How many jobs the queue holds by state (the scheduler's queue-depth gauge). */
  async jobCounts(): Promise<QueueCounts> {
    const c = await this.queue.getJobCounts(...QUEUE_STATES);
    return { waiting: c.waiting ?? 0, active: c.active ?? 0, delayed: c.delayed ?? 0, failed: c.failed ?? 0 };
  }

  /**
   * The doorbell: look now instead of at the next sweep. With a session id (a `turn_ended`), only
   * when the session is one of this runner's open runs — another's is its runner's business, and
   * a chat's turns concern no scheduler.
   */
  ring(sessionId?: string): void {
    if (sessionId !== undefined && !this.mine.has(sessionId)) return;
    void this.tick();
  }

  /** The longest sleep of a watcher without open runs: below `staleMs` (a new run is seen before it can go stale). */
  idleSweepMs(): number {
    return Math.max(this.opts.pollMs, Math.min(IDLE_SWEEP_MAX_MS, Math.floor(this.opts.staleMs / 3)));
  }

  /** Sweeps in `ms` unless a sweep is already due sooner. */
  private sweepIn(ms: number): void {
    if (this.stopped) return;
    const at = Date.now() + ms;
    if (this.sweepTimer && this.sweepAt <= at) return;
    this.clearSweep();
    this.sweepAt = at;
    this.sweepTimer = setTimeout(() => {
      this.sweepTimer = null;
      this.sweepAt = Infinity;
      void this.tick();
    }, ms);
    this.sweepTimer.unref();
  }

  private clearSweep(): void {
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    this.sweepTimer = null;
    this.sweepAt = Infinity;
  }

  // ------------------------------------------------------------------ mirror

  /** Makes BullMQ's job schedulers equal the enabled schedules of the table; runs missed fires once. */
  async reconcile(): Promise<void> {
    if (this.stopped) return;
    const schedules = await this.jobs.enabledSchedules();
    const wanted = new Set<string>();
    for (const job of schedules) {
      if (!job.cron) continue;
      wanted.add(schedulerId(job.id));
      await this.queue.upsertJobScheduler(
        schedulerId(job.id),
        { pattern: job.cron, tz: job.timezone ?? 'UTC' },
        { name: FIRE, data: { job_id: job.id }, opts: { removeOnComplete: 100, removeOnFail: 100 } },
      );
      await this.catchUp(job);
    }
    for (const s of await this.queue.getJobSchedulers(0, -1)) {
      const key = s?.key ?? s?.id;
      if (key && !wanted.has(key)) await this.queue.removeJobScheduler(key);
    }
  }

  /**
   * A fire missed during downtime (or while Redis was gone) runs once afterwards — the last
   * missed due time only, never a burst; the fence dedups it against a late BullMQ fire.
   */
  private async catchUp(job: JobRow): Promise<void> {
    if (!job.cron || !job.next_run_at) return;
    const now = new Date();
    if (job.next_run_at.getTime() > now.getTime() - 2_000) return;
    const due = lastFireAtOrBefore(job.cron, job.timezone ?? 'UTC', now);
    if (due && due.getTime() >= job.next_run_at.getTime()) {
      this.log.info({ jobId: job.id, dueAt: due.toISOString() }, 'running a fire missed during downtime once');
      await this.enqueue(job.id, due);
    }
    await this.jobs.advanceNextRun(job.id, nextFire(job.cron, job.timezone ?? 'UTC', now));
  }

  /** Removes a job's scheduler (disabled, deleted) and adds / updates it (created, edited). */
  async sync(job: JobRow | null, jobId: string): Promise<void> {
    if (!job || !job.enabled || !job.cron) {
      await this.queue.removeJobScheduler(schedulerId(jobId));
      return;
    }
    await this.queue.upsertJobScheduler(
      schedulerId(job.id),
      { pattern: job.cron, tz: job.timezone ?? 'UTC' },
      { name: FIRE, data: { job_id: job.id }, opts: { removeOnComplete: 100, removeOnFail: 100 } },
    );
  }

  /** A one-off fire (run now, catch-up, async task). Deterministic BullMQ id per due time. */
  async enqueue(jobId: string, dueAt: Date, manual = false): Promise<void> {
    await this.queue.add(FIRE, { job_id: jobId, due_at: dueAt.toISOString(), manual } satisfies FireData, {
      jobId: `once-${jobId}-${dueAt.getTime()}`,
      removeOnComplete: 100,
      removeOnFail: 100,
    });
  }

  // ------------------------------------------------------------------ runner

  private async process(job: Job<FireData>): Promise<void> {
    const due = job.data.due_at ? new Date(job.data.due_at) : new Date(job.opts.prevMillis ?? job.timestamp);
    await this.fire(job.data.job_id, due, job.data.manual === true);
  }

  /** Fences the fire in Postgres, then starts the job's session. Safe to call twice for one fire. */
  async fire(jobId: string, dueAt: Date, manual = false): Promise<string | null> {
    const job = await this.jobs.jobById(jobId);
    if (!job) return null;
    if (job.kind !== 'async' && !job.enabled && !manual) return null;
    if (job.cron && !manual) await this.jobs.advanceNextRun(job.id, nextFire(job.cron, job.timezone ?? 'UTC', dueAt));
    const fence = await this.jobs.fenceRun({ jobId, userId: job.user_id, dueAt, runner: this.opts.runner });
    if (fence.kind !== 'started') {
      this.log.info({ jobId, dueAt: dueAt.toISOString(), fence: fence.kind }, 'fire not started');
      return null;
    }
    this.log.info({ jobId, runId: fence.runId, userId: job.user_id, dueAt: dueAt.toISOString() }, 'job run fenced');
    // This runner holds an open run now: it heartbeats and polls it every pollMs.
    this.mine.add(fence.runId);
    this.fencedDuringSweep.add(fence.runId);
    this.sweepIn(this.opts.pollMs);
    const run = await this.jobs.runById(fence.runId);
    if (run) await this.startSession(job, run);
    return fence.runId;
  }

  private actor(job: JobRow): Actor {
    return { userId: job.user_id, role: job.owner_role };
  }

  /**
   * The owner as the gateway knows them at this fire: the actor the session runs as (the current
   * role, written back to the job so its status, delivery and cancel use it too), or why the fire
   * is refused. Null when the gateway cannot be asked: the run stays `starting` and the watcher
   * asks again — a fire never starts unchecked.
   */
  private async owner(job: JobRow, run: RunRow): Promise<{ actor: Actor } | { refused: string } | null> {
    let standing: UserStandingReply;
    try {
      standing = await this.owners.standing(job.user_id);
    } catch (e) {
      this.warn("could not read the job owner's standing; will retry", e, { runId: run.id });
      return null;
    }
    const refused = ownerRefusal(job, standing);
    if (refused !== null || standing.role === null) return { refused: refused ?? 'the job has no owner' };
    if (standing.role !== job.owner_role) {
      await this.jobs.setOwnerRole(job.id, standing.role);
      job.owner_role = standing.role;
    }
    return { actor: { userId: job.user_id, role: standing.role } };
  }

  private async startSession(job: JobRow, run: RunRow): Promise<void> {
    const owner = await this.owner(job, run);
    if (owner === null) return;
    if ('refused' in owner) {
      if (await this.jobs.refuseRun(run.id, owner.refused)) {
        this.mine.delete(run.id);
        this.log.warn({ runId: run.id, jobId: job.id, userId: job.user_id, reason: owner.refused }, 'job run refused');
      }
      return;
    }
    try {
      const { sessionId } = await this.sessions.start({
        actor: owner.actor,
        runId: run.id,
        kind: job.kind,
        agentId: job.agent_id,
        prompt: job.prompt,
        // An async task runs under its parent conversation's policy, read by the worker at this
        // start from the parent's row (a deleted parent: `JobStartRefused`, the run fails with why).
        runContext: job.kind === 'async' ? {} : (job.run_context ?? {}),
        parentSessionId: job.kind === 'async' ? job.parent_session_id : null,
        scratchpadSessionId: job.scratchpad_session_id,
        client: job.client,
      });
      await this.jobs.markRunning(run.id, sessionId);
      this.mine.add(sessionId);
      if (job.kind === 'async' && job.parent_source)
        this.events.taskUpdate(job.user_id, {
          job_id: job.id,
          title: job.title,
          agent_id: job.agent_id,
          session_id: sessionId,
          state: 'running',
          source: job.parent_source,
        });
    } catch (e) {
      if (e instanceof JobStartRefused) await this.end(run, { kind: 'start_failed', error: e.message });
      // Otherwise (no worker answering): the run stays `starting`; the watcher retries the
      // (idempotent) start.
      else this.warn('could not start a job session; will retry', e, { runId: run.id });
    }
  }

  // ------------------------------------------------------------------ watcher

  async tick(): Promise<void> {
    if (this.ticking) {
      this.tickAgain = true;
      return;
    }
    this.ticking = true;
    let next = this.opts.pollMs;
    try {
      do {
        this.tickAgain = false;
        next = await this.sweep();
      } while (this.tickAgain && !this.stopped);
    } catch (e) {
      next = this.opts.pollMs;
      this.warn('sweep failed', e);
    } finally {
      this.ticking = false;
      this.sweepIn(next);
    }
  }

  /** One sweep; returns when the next one is due (ms from now). */
  private async sweep(): Promise<number> {
    if (this.stopped) return this.opts.pollMs;
    this.fencedDuringSweep = new Set();
    const found = await this.jobs.sweep(this.opts.runner, this.opts.staleMs);
    this.mine = new Set([
      ...found.mine.flatMap((r) => (r.session_id ? [r.id, r.session_id] : [r.id])),
      ...this.fencedDuringSweep,
    ]);
    if (found.adopted.length > 0) this.log.info({ runIds: found.adopted }, 'adopted the runs of a silent runner');
    for (const run of found.mine) {
      const job = await this.jobs.jobById(run.job_id);
      if (!job) continue;
      if (run.status === 'starting' || !run.session_id) {
        if (run.kill_requested_at) {
          await this.end(run, { kind: 'cancelled' });
          continue;
        }
        await this.startSession(job, run);
        continue;
      }
      let status;
      try {
        status = await this.sessions.status(this.actor(job), run.session_id);
      } catch (e) {
        this.warn('could not read a job session', e, { runId: run.id });
        continue;
      }
      if (status.state !== 'ended') {
        // A kill is asked again at each sweep until the session stops: one that landed before the
        // session's turn started found nothing to stop (a /stop stops only a running turn).
        if (run.kill_requested_at)
          await this.sessions
            .cancel(this.actor(job), run.session_id)
            .catch((e: unknown) => this.warn('could not cancel a killed run', e, { runId: run.id }));
        continue;
      }
      const input: JobEndingInput =
        status.ending === 'final'
          ? { kind: 'final', finalText: status.final_text ?? '' }
          : status.ending === 'cancelled'
            ? { kind: 'cancelled', partialOutput: status.partial_output }
            : { kind: 'failed', error: status.error ?? 'the task failed', partialOutput: status.partial_output };
      await this.end(run, input);
    }
    for (const run of found.undelivered) await this.deliver(run);
    for (const job of found.orphans) await this.enqueue(job.id, job.created_at);
    if (found.mine.length > 0) return this.opts.pollMs;
    const idle = this.idleSweepMs();
    if (found.wakeInMs === null) return idle;
    return Math.min(idle, Math.max(this.opts.pollMs, Math.ceil(found.wakeInMs) + DEADLINE_SLACK_MS));
  }

  /** One classification, one conditional terminal write, then the one delivery site. */
  private async end(run: RunRow, input: JobEndingInput): Promise<void> {
    const job = await this.jobs.jobById(run.job_id);
    if (!job) return;
    const ending = classifyEnding(input, job.title);
    if (!(await this.jobs.finishRun(run.id, ending))) return;
    this.log.info({ runId: run.id, jobId: job.id, userId: job.user_id, status: ending.status }, 'job run ended');
    const ended = await this.jobs.runById(run.id);
    if (ended) await this.deliver(ended, job);
  }

  /** The one delivery site, chosen by the job's kind alone. Idempotent (keyed by the run id). */
  private async deliver(run: RunRow, known?: JobRow): Promise<void> {
    const job = known ?? (await this.jobs.jobById(run.job_id));
    if (!job || run.status === 'starting' || run.status === 'running') return;
    const ending = classifyEnding(endingInputOf(run), job.title);
    try {
      switch (job.kind) {
        case 'async':
          try {
            await this.sessions.deliver({
              actor: this.actor(job),
              deliveryId: run.id,
              sessionId: job.parent_session_id ?? undefined,
              toolName: 'task_completed',
              arguments: { task_id: job.id, title: job.title },
              result: ending.resultText,
            });
          } catch (e) {
            // The parent conversation was deleted: no conversation to deliver into (asking again
            // would never succeed); the task_update below still tells the parent's source.
            if (!(e instanceof JobDeliveryTargetGone)) throw e;
            this.log.info({ runId: run.id, jobId: job.id, userId: job.user_id }, 'the parent conversation is gone');
          }
          if (job.parent_source)
            this.events.taskUpdate(job.user_id, {
              job_id: job.id,
              title: job.title,
              agent_id: job.agent_id,
              ...(run.session_id ? { session_id: run.session_id } : {}),
              state: ending.taskState,
              ...(ending.error ? { error: ending.error } : {}),
              source: job.parent_source,
            });
          break;
        case 'tic':
          // A tick reports to nobody's chat: its run and its session (source `tic`) are the record.
          break;
        case 'cron': {
          const source = await this.home.homeSource(job.user_id);
          const summary = notificationSummary(job.title, ending);
          await this.sessions.deliver({
            actor: this.actor(job),
            deliveryId: run.id,
            source,
            toolName: 'read_notification',
            arguments: { job_id: job.id, run_id: run.id, title: job.title },
            result: ending.resultText,
          });
          this.events.notification(job.user_id, {
            summary,
            refs: { job_id: job.id, run_id: run.id, ...(run.session_id ? { session_id: run.session_id } : {}) },
            source,
          });
          break;
        }
      }
      // Webhooks and e-mail, keyed by the run: a delivery the sweep repeats notifies once.
      if (job.kind !== 'tic' && this.notify)
        await this.notify.jobFinished({
          userId: job.user_id,
          eventKey: `job-run:${run.id}`,
          summary: notificationSummary(job.title, ending),
          refs: { job_id: job.id, run_id: run.id, ...(run.session_id ? { session_id: run.session_id } : {}) },
        });
      await this.jobs.markDelivered(run.id);
    } catch (e) {
      this.warn('delivery failed; the sweep retries it', e, { runId: run.id });
    }
  }

  private warn(msg: string, e: unknown, extra: Record<string, unknown> = {}): void {
    this.log.warn({ ...extra, err: e instanceof Error ? e.message : String(e) }, msg);
  }
}

/**
 * Why a fire may not run for this owner, or null: a disabled or deleted owner runs nothing, and a
 * RunContext field only an admin sets (`ADMIN_ONLY_RUN_CONTEXT_FIELDS`) is not used by an owner
 * who is no longer an admin (the same check as every route that takes a RunContext).
 */
export function ownerRefusal(job: Pick<JobRow, 'run_context'>, owner: UserStandingReply): string | null {
  if (owner.standing === 'disabled') return "refused: the job's owner is disabled";
  if (owner.standing === 'deleted' || owner.role === null) return "refused: the job's owner no longer exists";
  const field = adminOnlyRunContextField(job.run_context, owner.role);
  if (field !== null)
    return `refused: the job's run_context sets ${field}, which only an admin sets, and its owner is no longer an admin`;
  return null;
}
