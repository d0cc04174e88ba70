import { adminOnlyRunContextField, adminOnlyRunContextMessage, USER_CAPS, userCapReached } from '@skald/contracts';
import type { Actor, CronJobDto, CronJobInput, CronJobPatch, JobRunContext, JobRunDto } from '@skald/contracts';
import { RemoteError } from '@skald/messaging/bus-errors';
import { InvalidCronError, nextFire, validateCron } from './cron-spec';
import { classifyEnding, endingInputOf, notificationSummary } from './job-ending';
import type { JobEngine } from './job-engine';
import type { JobSessionsPort, UserPagesPort } from './job-ports';
import { JobRow, RunRow } from './job-rows';
import { JobsRepository } from './jobs.repository';

export interface JobsSettings {
  minIntervalS: number;
  maxAsyncPerUser: number;
  /** Cron jobs a user may own (`SKALD_MAX_CRON_JOBS_PER_USER`; default `USER_CAPS.cron_jobs`). */
  maxCronPerUser?: number;
  /** The periodic system tick's schedule (`SKALD_TIC_CRON`, UTC); null: ticks only when asked. */
  ticCron: string | null;
}

/** What the `tic` agent is asked on every tick. */
export const TIC_PROMPT =
  'System tick: check your notes, todos and pending work, do what is due now, and report briefly what you did.';

const notFound = () => new RemoteError({ code: 'not_found', message: 'job not found' });
const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export function toCronJobDto(j: JobRow & { running_session_id?: string | null }): CronJobDto {
  return {
    id: j.id,
    title: j.title,
    prompt: j.prompt,
    agent_id: j.agent_id,
    cron: j.cron ?? '',
    timezone: j.timezone ?? 'UTC',
    enabled: j.enabled,
    next_run_at: iso(j.next_run_at),
    last_run_at: iso(j.last_run_at),
    ...(j.running_session_id ? { running_session_id: j.running_session_id } : {}),
  };
}

export function toRunDto(r: RunRow): JobRunDto {
  return {
    id: r.id,
    job_id: r.job_id,
    session_id: r.session_id,
    status: r.status === 'starting' ? 'running' : r.status,
    started_at: new Date(r.started_at).toISOString(),
    completed_at: iso(r.completed_at),
    ...(r.final_response !== null ? { final_response: r.final_response } : {}),
    ...(r.error !== null ? { error: r.error } : {}),
  };
}

/** Cron jobs (REST through the gateway), async tasks (from the loop), kill. */
export class JobsService {
  constructor(
    private readonly jobs: JobsRepository,
    private readonly engine: JobEngine,
    private readonly sessions: JobSessionsPort,
    private readonly settings: JobsSettings,
  ) {}

  private check(cron: string, timezone: string): void {
    try {
      validateCron(cron, timezone, this.settings.minIntervalS);
    } catch (e) {
      if (e instanceof InvalidCronError)
        throw new RemoteError({ code: 'invalid_input', message: e.message, field: e.field });
      throw e;
    }
  }

  /** A RunContext field only an admin sets, from a non-admin: refused, naming it (the gateway refuses it first). */
  private checkRunContext(actor: Actor, rc: JobRunContext | undefined): void {
    const f = adminOnlyRunContextField(rc, actor.role);
    if (f === null) return;
    const field = `run_context.${f}`;
    throw new RemoteError({ code: 'forbidden', message: adminOnlyRunContextMessage(field), field });
  }

  async list(actor: Actor): Promise<{ items: CronJobDto[] }> {
    return { items: (await this.jobs.listCron(actor.userId)).map(toCronJobDto) };
  }

  async create(actor: Actor, input: CronJobInput): Promise<{ id: string }> {
    const timezone = input.timezone ?? 'UTC';
    this.checkRunContext(actor, input.run_context);
    this.check(input.cron, timezone);
    const enabled = input.enabled ?? true;
    const cap = this.settings.maxCronPerUser ?? USER_CAPS.cron_jobs.default;
    const created = await this.jobs.createCronCapped(
      {
        userId: actor.userId,
        role: actor.role,
        title: input.title,
        prompt: input.prompt,
        agentId: input.agent_id ?? 'main',
        cron: input.cron,
        timezone,
        enabled,
        runContext: input.run_context ?? {},
        nextRunAt: enabled ? nextFire(input.cron, timezone, new Date()) : null,
      },
      cap,
    );
    if (created.kind === 'capped') throw new RemoteError(userCapReached('cron_jobs', cap, created.have));
    const { id } = created;
    await this.engine.sync(await this.jobs.jobById(id), id);
    return { id };
  }

  async update(actor: Actor, jobId: string, patch: CronJobPatch): Promise<CronJobDto> {
    this.checkRunContext(actor, patch.run_context);
    const job = await this.jobs.findJob({ userId: actor.userId, jobId, kind: 'cron' });
    if (!job) throw notFound();
    const cron = patch.cron ?? job.cron ?? '';
    const timezone = patch.timezone ?? job.timezone ?? 'UTC';
    if (patch.cron !== undefined || patch.timezone !== undefined) this.check(cron, timezone);
    const enabled = patch.enabled ?? job.enabled;
    await this.jobs.updateCron(
      { userId: actor.userId, jobId },
      {
        title: patch.title,
        prompt: patch.prompt,
        agent_id: patch.agent_id,
        cron: patch.cron,
        timezone: patch.timezone,
        enabled: patch.enabled,
        run_context: patch.run_context,
        next_run_at: enabled ? nextFire(cron, timezone, new Date()) : null,
      },
    );
    return this.resync(actor, jobId);
  }

  async toggle(actor: Actor, jobId: string): Promise<CronJobDto> {
    const job = await this.jobs.findJob({ userId: actor.userId, jobId, kind: 'cron' });
    if (!job) throw notFound();
    const enabled = !job.enabled;
    await this.jobs.updateCron(
      { userId: actor.userId, jobId },
      { enabled, next_run_at: enabled && job.cron ? nextFire(job.cron, job.timezone ?? 'UTC', new Date()) : null },
    );
    return this.resync(actor, jobId);
  }

  private async resync(actor: Actor, jobId: string): Promise<CronJobDto> {
    const job = await this.jobs.jobById(jobId);
    await this.engine.sync(job, jobId);
    const row = (await this.jobs.listCron(actor.userId)).find((j) => j.id === jobId);
    if (!row) throw notFound();
    return toCronJobDto(row);
  }

  async delete(actor: Actor, jobId: string): Promise<{ done: boolean }> {
    const open = await this.jobs.openRunOf({ userId: actor.userId, jobId });
    if (!(await this.jobs.deleteJob({ userId: actor.userId, jobId }))) throw notFound();
    await this.engine.sync(null, jobId);
    if (open?.session_id) await this.sessions.cancel(actor, open.session_id).catch(() => undefined);
    return { done: true };
  }

  /** Run now (also when disabled). A fire while a run is open is refused with a conflict. */
  async runNow(actor: Actor, jobId: string): Promise<{ run_id: string }> {
    const job = await this.jobs.findJob({ userId: actor.userId, jobId, kind: 'cron' });
    if (!job) throw notFound();
    const runId = await this.engine.fire(jobId, new Date(), true);
    if (!runId) throw new RemoteError({ code: 'conflict', message: 'the job is already running' });
    return { run_id: runId };
  }

  /**
   * `POST /api/tic/trigger`: run the caller's system tick now, through the same job path (an
   * ephemeral `tic` session of the `tic` agent, approvals auto-denied). 409 while one runs.
   */
  async ticTrigger(actor: Actor): Promise<{ run_id: string }> {
    const jobId = await this.jobs.ensureTic({
      userId: actor.userId,
      role: actor.role,
      agentId: 'tic',
      prompt: TIC_PROMPT,
      ...this.ticSchedule(),
    });
    const runId = await this.engine.fire(jobId, new Date(), true);
    if (!runId) throw new RemoteError({ code: 'conflict', message: 'a system tick is already running' });
    return { run_id: runId };
  }

  /** Where the next `ensureTics` pass reads the users from (null: the first). */
  private ticCursor: string | null = null;

  /**
   * One bounded pass of the tic reconciliation: the next `limit` users (in id order, from where the
   * last pass stopped, starting over at the end) get their tic job if they have none — every user
   * ticks without ever pressing "run now". A user created meanwhile is reached within one round.
   * How many were created.
   */
  async ensureTics(users: UserPagesPort, limit: number): Promise<number> {
    const page = await users.page(this.ticCursor, limit);
    this.ticCursor = page.next;
    return this.jobs.ensureTics({
      users: page.items.map((u) => ({ userId: u.user_id, role: u.role })),
      agentId: 'tic',
      prompt: TIC_PROMPT,
      ...this.ticSchedule(),
    });
  }

  /** At start: every tic job follows `SKALD_TIC_CRON` (a changed schedule applies, `off` stops the ticks). */
  async applyTicSchedule(): Promise<void> {
    const { cron, nextRunAt } = this.ticSchedule();
    await this.jobs.applyTicSchedule(cron, nextRunAt);
  }

  private ticSchedule(): { cron: string | null; nextRunAt: Date | null } {
    const cron = this.settings.ticCron;
    return { cron, nextRunAt: cron === null ? null : nextFire(cron, 'UTC', new Date()) };
  }

  /** Kill: the running session is cancelled through the same path as /stop. */
  async kill(actor: Actor, jobId: string): Promise<{ killed: boolean }> {
    const job = await this.jobs.findJob({ userId: actor.userId, jobId });
    if (!job || job.kind === 'tic') throw notFound();
    const run = await this.jobs.openRunOf({ userId: actor.userId, jobId });
    if (!run) return { killed: false };
    await this.jobs.requestKill(run.id);
    if (run.session_id) await this.sessions.cancel(actor, run.session_id);
    this.engine.ring();
    return { killed: true };
  }

  async runs(actor: Actor, jobId?: string): Promise<{ items: JobRunDto[] }> {
    return { items: (await this.jobs.listRuns({ userId: actor.userId, jobId })).map(toRunDto) };
  }

  /** `GET /api/notifications`: the truth behind the `notification` events (cron run endings). */
  async notifications(actor: Actor, before: string | undefined, limit: number) {
    const rows = await this.jobs.endedCronRuns({ userId: actor.userId, before, limit: limit + 1 });
    return {
      items: rows.slice(0, limit).map((r) => {
        const ending = classifyEnding(endingInputOf(r), r.title);
        return {
          id: r.id,
          summary: notificationSummary(r.title, ending),
          refs: { job_id: r.job_id, run_id: r.id, ...(r.session_id ? { session_id: r.session_id } : {}) },
          created_at: new Date(r.completed_at ?? r.started_at).toISOString(),
        };
      }),
      has_more: rows.length > limit,
    };
  }

  async tasks(actor: Actor, sessionId: string) {
    const rows = await this.jobs.tasksOfParent({ userId: actor.userId, sessionId });
    return {
      items: rows.map((r) => ({
        job_id: r.job_id,
        title: r.title,
        agent_id: r.agent_id,
        session_id: r.session_id,
        state:
          r.status === 'failed'
            ? ('failed' as const)
            : r.status === 'cancelled'
              ? ('cancelled' as const)
              : ('running' as const),
        started_at: new Date(r.started_at).toISOString(),
        ...(r.error ? { error: r.error } : {}),
      })),
    };
  }

  /** `execute_task` mode async: a durable job (idempotent by the tool call id), started at once. */
  async submitAsync(
    actor: Actor,
    r: {
      idempotencyKey: string;
      parentSessionId: string;
      parentToolCallId: string;
      source: string;
      scratchpadSessionId: string;
      agentId: string;
      prompt: string;
      title: string | null;
      description: string | null;
      client: string | null;
    },
  ): Promise<{ job_id: string; duplicate: boolean }> {
    const title = r.title ?? (r.description ?? r.prompt).slice(0, 80);
    const created = await this.jobs.createAsync(
      {
        userId: actor.userId,
        role: actor.role,
        idempotencyKey: r.idempotencyKey,
        title,
        agentId: r.agentId,
        prompt: r.prompt,
        parentSessionId: r.parentSessionId,
        parentToolCallId: r.parentToolCallId,
        parentSource: r.source,
        scratchpadSessionId: r.scratchpadSessionId,
        client: r.client,
      },
      this.settings.maxAsyncPerUser,
    );
    if (created.kind === 'capped')
      throw new RemoteError({
        code: 'rate_limited',
        message: `You already have ${created.open} background tasks running (the limit is ${this.settings.maxAsyncPerUser}). Wait for one to finish, or run this one with mode sync.`,
      });
    const job = await this.jobs.jobById(created.id);
    if (job && created.kind === 'created') await this.engine.enqueue(job.id, job.created_at);
    return { job_id: created.id, duplicate: created.kind === 'duplicate' };
  }
}
