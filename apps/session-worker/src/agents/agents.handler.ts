import { Injectable, OnModuleInit } from '@nestjs/common';
import { Bus } from '@skald/messaging/bus-port';
import { GroupPolicyService } from '../groups/group-policy.service';
import { AgentCatalogService } from './agent-catalog.service';

/** NATS edge of the agents catalog: parse (the Bus does), authorise, make one call. */
@Injectable()
export class AgentsHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly catalog: AgentCatalogService,
    private readonly policies: GroupPolicyService,
  ) {}

  onModuleInit(): void {
    // The list shows the agents the caller's groups allow (the groups are what authorises an agent).
    this.bus.handle('agents.list', async (r) => this.catalog.list(r.actor, await this.policies.of(r.actor.userId)));
    this.bus.handle('agents.get', (r) => this.catalog.detail(r.actor, r.agent_id));
    this.bus.handle('agents.put', (r) => this.catalog.put(r.actor, r.agent_id, { prompt: r.prompt, meta: r.meta }));
    this.bus.handle('agents.delete_override', (r) => this.catalog.deleteOverride(r.actor, r.agent_id));
  }
}
