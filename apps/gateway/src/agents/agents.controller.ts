import { Body, Controller, Param } from '@nestjs/common';
import { Actor, AgentId, ROUTES } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { CurrentActor } from '../auth/actor.decorator';
import { notFound } from '../http/api-error';
import { validate } from '../http/validate';
import { Route } from '../http/route.decorator';

const checkAgentId = (id: string): string => {
  if (!AgentId.safeParse(id).success) throw notFound('agent');
  return id;
};

/** The agents catalog (owned by the session worker): task agents, one agent, the caller's overrides. */
@Controller()
export class AgentsController {
  constructor(private readonly bus: Bus) {}

  @Route(ROUTES.listAgents)
  list(@CurrentActor() actor: Actor) {
    return this.bus.call('agents.list', { actor });
  }

  @Route(ROUTES.getAgent)
  get(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.bus.call('agents.get', { actor, agent_id: checkAgentId(id) });
  }

  @Route(ROUTES.putAgent)
  put(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const agentId = checkAgentId(id);
    const { prompt, meta } = validate(ROUTES.putAgent.body, body);
    return this.bus.call('agents.put', { actor, agent_id: agentId, prompt, meta });
  }

  @Route(ROUTES.deleteAgentOverride)
  async deleteOverride(@CurrentActor() actor: Actor, @Param('id') id: string) {
    await this.bus.call('agents.delete_override', { actor, agent_id: checkAgentId(id) });
  }
}
