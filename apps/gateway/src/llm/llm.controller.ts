import { Controller, Get, Query } from '@nestjs/common';
import { Actor, LlmClientsQuery } from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { validate } from '../http/validate';
import { LlmGateway } from './llm.gateway';

/** The configured LLM clients with their health across every worker replica (and the caller's pin for `source`). */
@Controller('api/llm')
export class LlmController {
  constructor(private readonly llm: LlmGateway) {}

  @Get('clients')
  clients(@CurrentActor() actor: Actor, @Query() query: unknown) {
    return this.llm.clients(actor, validate(LlmClientsQuery, query).source);
  }
}
