import { Controller, Param, Query } from '@nestjs/common';
import { Actor, Id, ROUTES } from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { ApiError } from '../http/api-error';
import { Route } from '../http/route.decorator';
import { validate } from '../http/validate';
import { AdminSessionsService } from './admin-sessions.service';

/** A path id that is not a UUID names nothing: 404, like a missing one. */
function sessionId(id: string): string {
  if (!Id.safeParse(id).success) throw new ApiError('not_found', 'session not found');
  return id;
}

/** An admin's read-only view of any user's conversation (admin-only routes: 403 for anyone else). */
@Controller()
export class AdminSessionsController {
  constructor(private readonly sessions: AdminSessionsService) {}

  @Route(ROUTES.adminGetSession)
  summary(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.sessions.summary(actor, sessionId(id));
  }

  @Route(ROUTES.adminSessionMessages)
  messages(@CurrentActor() actor: Actor, @Param('id') id: string, @Query() query: unknown) {
    const sid = sessionId(id);
    const q = validate(ROUTES.adminSessionMessages.query, query);
    return this.sessions.messages(actor, sid, q.before, q.limit);
  }
}
