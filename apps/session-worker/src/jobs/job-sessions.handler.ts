import { Injectable, OnModuleInit } from '@nestjs/common';
import { Bus } from '@skald/messaging/bus-port';
import { JobSessionsService } from './job-sessions.service';

/** NATS edge for the scheduler's requests: parse (the Bus does), make one call. */
@Injectable()
export class JobSessionsHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly jobs: JobSessionsService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('session.job.start', (r) =>
      this.jobs.start({
        actor: r.actor,
        runId: r.run_id,
        kind: r.kind,
        agentId: r.agent_id,
        prompt: r.prompt,
        runContext: r.run_context,
        parentSessionId: r.parent_session_id ?? null,
        scratchpadSessionId: r.scratchpad_session_id,
        client: r.client,
      }),
    );
    this.bus.handle('session.job.status', (r) => this.jobs.status(r.actor, r.session_id));
    this.bus.handle('session.job.deliver', (r) =>
      this.jobs.deliver({
        actor: r.actor,
        deliveryId: r.delivery_id,
        sessionId: r.session_id,
        source: r.source,
        toolName: r.tool_name,
        arguments: r.arguments,
        result: r.result,
      }),
    );
  }
}
