import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { Actor, CronJobInput, CronJobPatch, Id, NotificationsQuery, Source } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import { CurrentActor } from '../auth/actor.decorator';
import { ApiError, callService } from '../http/api-error';
import { validate } from '../http/validate';
import { refuseAdminOnlyFields } from '../http/admin-only';
import { refuseForeignMcpServers } from '../http/own-mcp-servers';
import { SessionsGateway } from '../sessions/sessions.gateway';

const jobId = (id: string): string => {
  if (!Id.safeParse(id).success) throw new ApiError('not_found', 'job not found');
  return id;
};

/** Cron jobs and their runs, and the task strip of a source; kept by the scheduler. */
@Controller('api')
export class CronController {
  constructor(
    private readonly bus: Bus,
    private readonly sessions: SessionsGateway,
  ) {}

  @Get('cron/jobs')
  list(@CurrentActor() actor: Actor) {
    return this.call(() => this.bus.call('cron.jobs.list', { actor }));
  }

  @Post('cron/jobs')
  @HttpCode(201)
  async create(@CurrentActor() actor: Actor, @Body() body: unknown) {
    const job = validate(CronJobInput, body);
    refuseAdminOnlyFields(actor, job.run_context, 'run_context');
    await refuseForeignMcpServers(this.bus, actor, job.run_context, 'run_context');
    return this.call(() => this.bus.call('cron.jobs.create', { actor, job }));
  }

  @Patch('cron/jobs/:id')
  async update(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const patch = validate(CronJobPatch, body);
    refuseAdminOnlyFields(actor, patch.run_context, 'run_context');
    await refuseForeignMcpServers(this.bus, actor, patch.run_context, 'run_context');
    return this.call(() => this.bus.call('cron.jobs.update', { actor, job_id: jobId(id), patch }));
  }

  @Delete('cron/jobs/:id')
  @HttpCode(204)
  async delete(@CurrentActor() actor: Actor, @Param('id') id: string) {
    await this.call(() => this.bus.call('cron.jobs.delete', { actor, job_id: jobId(id) }));
  }

  @Post('cron/jobs/:id/toggle')
  @HttpCode(200)
  toggle(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.call(() => this.bus.call('cron.jobs.toggle', { actor, job_id: jobId(id) }));
  }

  @Post('cron/jobs/:id/run')
  @HttpCode(202)
  run(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.call(() => this.bus.call('cron.jobs.run', { actor, job_id: jobId(id) }));
  }

  @Post('cron/jobs/:id/kill')
  @HttpCode(202)
  kill(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.call(() => this.bus.call('cron.jobs.kill', { actor, job_id: jobId(id) }));
  }

  @Get('cron/runs')
  runs(@CurrentActor() actor: Actor, @Query('job_id') job?: string) {
    const job_id = job === undefined ? undefined : jobId(job);
    return this.call(() => this.bus.call('cron.runs.list', { actor, job_id }));
  }

  @Get('notifications')
  notifications(@CurrentActor() actor: Actor, @Query() query: unknown) {
    const q = validate(NotificationsQuery, query);
    return this.call(() => this.bus.call('notifications.list', { actor, before: q.before, limit: q.limit }));
  }

  @Get(':source/tasks')
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
