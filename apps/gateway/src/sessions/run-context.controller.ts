import { Body, Controller, Param } from '@nestjs/common';
import { Actor, Id, ROUTES } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { CurrentActor } from '../auth/actor.decorator';
import { ApiError, callService } from '../http/api-error';
import { validate } from '../http/validate';
import { refuseAdminOnlyFields } from '../http/admin-only';
import { refuseForeignMcpServers } from '../http/own-mcp-servers';
import { Route } from '../http/route.decorator';

const UNAVAILABLE = 'no session worker is available; retry shortly';

/** A session's RunContext (working directory, pre-authorised paths, enabled MCP servers), for the session's own user. */
@Controller()
export class RunContextController {
  constructor(private readonly bus: Bus) {}

  @Route(ROUTES.getRunContext)
  get(@CurrentActor() actor: Actor, @Param('id') id: string) {
    const sessionId = sessionIdOf(id);
    return callService(UNAVAILABLE, () => this.bus.call('session.run_context.get', { actor, session_id: sessionId }));
  }

  @Route(ROUTES.putRunContext)
  async put(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const sessionId = sessionIdOf(id);
    const rc = validate(ROUTES.putRunContext.body, body);
    // The security group picks which rules apply: choosing one is an admin's decision.
    refuseAdminOnlyFields(actor, rc);
    await refuseForeignMcpServers(this.bus, actor, rc);
    return callService(UNAVAILABLE, () =>
      this.bus.call('session.run_context.set', { actor, session_id: sessionId, run_context: rc }),
    );
  }
}

function sessionIdOf(id: string): string {
  if (!Id.safeParse(id).success) throw new ApiError('not_found', 'session not found');
  return id;
}
