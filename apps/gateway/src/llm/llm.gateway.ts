import { Injectable } from '@nestjs/common';
import { Actor } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { callService } from '../http/api-error';

/** The gateway's side of the LLM features, answered by the session workers (`llm.*` subjects). */
@Injectable()
export class LlmGateway {
  constructor(private readonly bus: Bus) {}

  clients(actor: Actor, source: string | undefined) {
    return this.call(() => this.bus.call('llm.clients', { actor, source }));
  }

  /** Pins a client for the source (`auto` clears); an unknown one is `invalid_input` naming `client`. */
  async pin(actor: Actor, source: string, client: string): Promise<string> {
    return (await this.call(() => this.bus.call('llm.pin', { actor, source, client }))).client;
  }

  private call<T>(fn: () => Promise<T>): Promise<T> {
    return callService('no session worker is available; retry shortly', fn);
  }
}
