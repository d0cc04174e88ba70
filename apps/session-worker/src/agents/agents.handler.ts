import { Injectable, OnModuleInit } from '@nestjs/common';
import { Bus } from '@skald/messaging';
import { AgentCatalogService } from './agent-catalog.service';

/** NATS edge of the agents catalog: parse (the Bus does), make one call. */
@Injectable()
export class AgentsHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly catalog: AgentCatalogService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('agents.list', (r) => this.catalog.list(r.actor));
    this.bus.handle('agents.get', (r) => this.catalog.detail(r.actor, r.agent_id));
    this.bus.handle('agents.put', (r) => this.catalog.put(r.actor, r.agent_id, { prompt: r.prompt, meta: r.meta }));
    this.bus.handle('agents.delete_override', (r) => this.catalog.deleteOverride(r.actor, r.agent_id));
  }
}
