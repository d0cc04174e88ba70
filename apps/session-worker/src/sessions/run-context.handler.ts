import { Injectable, OnModuleInit } from '@nestjs/common';
import { adminOnlyRunContextField, adminOnlyRunContextMessage } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import { RemoteError } from '@skald/messaging/bus-errors';
import { RunContextRepository } from './run-context.repository';

const notFound = () => Object.assign(new Error('session not found'), { code: 'not_found' });

/**
 * NATS edge of a session's RunContext: read and replace it, and read what the gate is asked with
 * for the session (`session.gate_context`, for the rules tester), for the session's own user only (a
 * foreign id is not found, like an unknown one). The gateway validated and normalised the paths;
 * a field only an admin sets (the security group) is refused here too, by the same check.
 */
@Injectable()
export class RunContextHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly repo: RunContextRepository,
  ) {}

  onModuleInit(): void {
    this.bus.handle('session.run_context.get', async (r) => {
      const rc = await this.repo.get({ userId: r.actor.userId, sessionId: r.session_id });
      if (!rc) throw notFound();
      return rc;
    });
    this.bus.handle('session.gate_context', async (r) => {
      const gc = await this.repo.gateContext({ userId: r.actor.userId, sessionId: r.session_id });
      if (!gc) throw notFound();
      return gc;
    });
    this.bus.handle('session.run_context.set', async (r) => {
      const f = adminOnlyRunContextField(r.run_context, r.actor.role);
      if (f !== null) throw new RemoteError({ code: 'forbidden', message: adminOnlyRunContextMessage(f), field: f });
      const { security_group, ...rest } = r.run_context;
      const rc = await this.repo.set({ userId: r.actor.userId, sessionId: r.session_id }, rest, security_group);
      if (!rc) throw notFound();
      return rc;
    });
  }
}
