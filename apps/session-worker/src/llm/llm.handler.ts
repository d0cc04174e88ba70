import { Injectable, OnModuleInit } from '@nestjs/common';
import { Bus } from '@skald/messaging/bus-port';
import { LlmService } from './llm.service';

/** NATS edge of the worker's LLM features: one call each. */
@Injectable()
export class LlmHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly llm: LlmService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('llm.clients', (r) => this.llm.list(r.actor, r.source));
    this.bus.handle('llm.pin', async (r) => ({ client: await this.llm.pin(r.actor, r.source, r.client) }));
    this.bus.handle('llm.command', async (r) => ({
      content: await this.llm.command(r.actor, r.source, r.command, r.args),
    }));
  }
}
