import { Injectable, OnModuleInit } from '@nestjs/common';
import { adminOnlyRunContextField, adminOnlyRunContextMessage } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { RemoteError } from '@skald/messaging/bus-errors';
import { AgentCatalogService } from '../agents/agent-catalog.service';
import { CallContextRepository, excerptOf } from './call-context.repository';
import { RunContextRepository } from './run-context.repository';

const notFound = () => Object.assign(new Error('session not found'), { code: 'not_found' });

/**
 * NATS edge of a session's RunContext: read and replace it, and read what the gate is asked with
 * for the session (`session.gate_context`, for the rules tester), for the session's own user only (a
 * foreign id is not found, like an unknown one). The gateway validated and normalised the paths;
 * a field only an admin sets (the security group) is refused here too, by the same check. And the
 * context the inbox and the audit show of a call (`session.call_context`).
 */
@Injectable()
export class RunContextHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly repo: RunContextRepository,
    private readonly calls: CallContextRepository,
    private readonly agents: AgentCatalogService,
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
    // The inbox's and the audit's context of calls: the caller's sessions only (an admin's: any).
    this.bus.handle('session.call_context', async (r) => {
      const rows = await this.calls.read(r.actor.role === 'admin' ? null : r.actor.userId, r.items);
      const names = new Map<string, Promise<string>>();
      const nameOf = (agentId: string, userId: string): Promise<string> => {
        const key = `${userId}\n${agentId}`;
        let name = names.get(key);
        if (!name) names.set(key, (name = this.agents.agentName(agentId, userId).catch(() => agentId)));
        return name;
      };
      return {
        items: await Promise.all(
          rows.map(async (row) => {
            const context = excerptOf(row.said);
            return {
              session_id: row.session_id,
              ...(row.tool_call_id ? { tool_call_id: row.tool_call_id } : {}),
              title: row.title,
              agent: { id: row.agent_id, name: await nameOf(row.agent_id, row.user_id) },
              ...(context !== undefined ? { context } : {}),
            };
          }),
        ),
      };
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
