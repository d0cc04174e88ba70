import { Body, Controller, Param, Query } from '@nestjs/common';
import { Actor, Id, ROUTES, Source } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { CurrentActor } from '../auth/actor.decorator';
import { ApiError, callService } from '../http/api-error';
import { validate } from '../http/validate';
import { refuseAdminOnlyFields } from '../http/admin-only';
import { refuseForeignMcpServers } from '../http/own-mcp-servers';
import { SessionsGateway } from '../sessions/sessions.gateway';
import { Route } from '../http/route.decorator';

const jobId = (id: string): string => {
  if (!Id.safeParse(id).success) throw new ApiError('not_found', 'job not found');
  return id;
};

/** Cron jobs and their runs, and the task strip of a source; kept by the scheduler. */
@Controller()
export class CronController {
  constructor(
    private readonly bus: Bus,
    private readonly sessions: SessionsGateway,
  ) {}

  @Route(ROUTES.listCronJobs)
  list(@CurrentActor() actor: Actor) {
    return this.call(() => this.bus.call('cron.jobs.list', { actor }));
  }

  @Route(ROUTES.createCronJob)
  async create(@CurrentActor() actor: Actor, @Body() body: unknown) {
    const job = validate(ROUTES.createCronJob.body, body);
    refuseAdminOnlyFields(actor, job.run_context, 'run_context');
    await refuseForeignMcpServers(this.bus, actor, job.run_context, 'run_context');
    return this.call(() => this.bus.call('cron.jobs.create', { actor, job }));
  }

  @Route(ROUTES.updateCronJob)
  async update(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const patch = validate(ROUTES.updateCronJob.body, body);
    refuseAdminOnlyFields(actor, patch.run_context, 'run_context');
    await refuseForeignMcpServers(this.bus, actor, patch.run_context, 'run_context');
    return this.call(() => this.bus.call('cron.jobs.update', { actor, job_id: jobId(id), patch }));
  }

  @Route(ROUTES.deleteCronJob)
  async delete(@CurrentActor() actor: Actor, @Param('id') id: string) {
    await this.call(() => this.bus.call('cron.jobs.delete', { actor, job_id: jobId(id) }));
  }

  @Route(ROUTES.toggleCronJob)
  toggle(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.call(() => this.bus.call('cron.jobs.toggle', { actor, job_id: jobId(id) }));
  }

  @Route(ROUTES.runCronJob)
  run(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.call(() => this.bus.call('cron.jobs.run', { actor, job_id: jobId(id) }));
  }

  @Route(ROUTES.killCronRun)
  kill(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.call(() => this.bus.call('cron.jobs.kill', { actor, job_id: jobId(id) }));
  }

  @Route(ROUTES.listCronRuns)
  runs(@CurrentActor() actor: Actor, @Query('job_id') job?: string) {
    const job_id = job === undefined ? undefined : jobId(job);
    return this.call(() => this.bus.call('cron.runs.list', { actor, job_id }));
  }

  @Route(ROUTES.listNotifications)
  notifications(@CurrentActor() actor: Actor, @Query() query: unknown) {
    const q = validate(ROUTES.listNotifications.query, query);
    return this.call(() => this.bus.call('notifications.list', { actor, before: q.before, limit: q.limit }));
  }

  @Route(ROUTES.listTasks)
  async tasks(@CurrentActor() actor: Actor, @Param('source') source: string) {
    const s = validate(Source, source);
    const sessionId = await this.sessions.activeSession(actor, s);
    return this.call(() => this.bus.call('tasks.list', { actor, session_id: sessionId }));
  }

  /** No scheduler answering → 503 with Retry-After. */
  private call<T>(fn: () => Promise<T>): Promise<T> {
    return callService('the scheduler is not available; retry shortly', fn);
  }
}
