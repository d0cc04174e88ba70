import { Injectable } from '@nestjs/common';
import { Actor } from '@skald/contracts';
import { Bus, BusRequestError } from '@skald/messaging';
import { ApiError } from '../http/api-error';

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

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof BusRequestError)
        throw new ApiError('unavailable', 'no session worker is available; retry shortly', undefined, 2);
      throw e;
    }
  }
}
