import type { Bus } from '@skald/messaging/bus-port';

import type { JobEngine } from './job-engine';
import type { JobsService } from './jobs.service';

/** NATS edge of the scheduler: parse (the Bus does), make one call. */
export function registerJobHandlers(bus: Bus, jobs: JobsService, engine: JobEngine): void {
  bus.handle('cron.jobs.list', (r) => jobs.list(r.actor));
  bus.handle('cron.jobs.create', (r) => jobs.create(r.actor, r.job));
  bus.handle('cron.jobs.update', (r) => jobs.update(r.actor, r.job_id, r.patch));
  bus.handle('cron.jobs.delete', (r) => jobs.delete(r.actor, r.job_id));
  bus.handle('cron.jobs.toggle', (r) => jobs.toggle(r.actor, r.job_id));
  bus.handle('cron.jobs.run', (r) => jobs.runNow(r.actor, r.job_id));
  bus.handle('cron.jobs.kill', (r) => jobs.kill(r.actor, r.job_id));
  bus.handle('cron.runs.list', (r) => jobs.runs(r.actor, r.job_id));
  bus.handle('notifications.list', (r) => jobs.notifications(r.actor, r.before, r.limit));
  bus.handle('tic.trigger', (r) => jobs.ticTrigger(r.actor));
  bus.handle('tasks.list', (r) => jobs.tasks(r.actor, r.session_id));
  bus.handle('tasks.submit_async', (r) =>
    jobs.submitAsync(r.actor, {
      idempotencyKey: r.idempotency_key,
      parentSessionId: r.parent_session_id,
      parentToolCallId: r.parent_tool_call_id,
      source: r.source,
      scratchpadSessionId: r.scratchpad_session_id,
      agentId: r.agent_id,
      prompt: r.prompt,
      title: r.title,
      description: r.description,
      client: r.client,
    }),
  );
  // The doorbell: a session's turn ended; the replica that runs it (if any) looks at once.
  bus.subscribe('sessionTurnEnded', (m) => engine.ring(m.session_id));
}
