import { Body, Controller, Delete, Get, HttpCode, Param, Put } from '@nestjs/common';
import { Actor, AgentId, PutAgentRequest } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import { CurrentActor } from '../auth/actor.decorator';
import { notFound } from '../http/api-error';
import { validate } from '../http/validate';

const checkAgentId = (id: string): string => {
  if (!AgentId.safeParse(id).success) throw notFound('agent');
  return id;
};

/** The agents catalog (owned by the session worker): task agents, one agent, the caller's overrides. */
@Controller('api/agents')
export class AgentsController {
  constructor(private readonly bus: Bus) {}

  @Get()
  list(@CurrentActor() actor: Actor) {
    return this.bus.call('agents.list', { actor });
  }

  @Get(':id')
  get(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.bus.call('agents.get', { actor, agent_id: checkAgentId(id) });
  }

  @Put(':id')
  put(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const agentId = checkAgentId(id);
    const { prompt, meta } = validate(PutAgentRequest, body);
    return this.bus.call('agents.put', { actor, agent_id: agentId, prompt, meta });
  }

  @Delete(':id/override')
  @HttpCode(204)
  async deleteOverride(@CurrentActor() actor: Actor, @Param('id') id: string) {
    await this.bus.call('agents.delete_override', { actor, agent_id: checkAgentId(id) });
  }
}
