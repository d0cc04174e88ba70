import { Controller, Query } from '@nestjs/common';
import { Actor, ROUTES } from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { validate } from '../http/validate';
import { LlmGateway } from './llm.gateway';
import { Route } from '../http/route.decorator';

/** The configured LLM clients with their health across every worker replica (and the caller's pin for `source`). */
@Controller()
export class LlmController {
  constructor(private readonly llm: LlmGateway) {}

  @Route(ROUTES.listLlmClients)
  clients(@CurrentActor() actor: Actor, @Query() query: unknown) {
    return this.llm.clients(actor, validate(ROUTES.listLlmClients.query, query).source);
  }
}
