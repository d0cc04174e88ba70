import { Body, Controller, Param } from '@nestjs/common';
import { Actor, Id, ROUTES } from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { notFound } from '../http/api-error';
import { validate } from '../http/validate';
import { ApprovalsGateway } from './approvals.gateway';
import { Route } from '../http/route.decorator';

const checkId = (id: string, what: string): string => {
  if (!Id.safeParse(id).success) throw notFound(what);
  return id;
};

/** Answers to human requests (by tool call id from the chat card, by request id from the inbox) and the inbox. */
@Controller()
export class ApprovalsController {
  constructor(private readonly approvals: ApprovalsGateway) {}

  @Route(ROUTES.resolveToolCall)
  resolveTool(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const b = validate(ROUTES.resolveToolCall.body, body);
    return this.approvals.resolve({ actor, tool_call_id: checkId(id, 'tool call'), ...b, channel: 'api' });
  }

  @Route(ROUTES.getInbox)
  inbox(@CurrentActor() actor: Actor) {
    return this.approvals.inbox(actor);
  }

  @Route(ROUTES.resolveApproval)
  resolveApproval(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const b = validate(ROUTES.resolveApproval.body, body);
    return this.approvals.resolve({ actor, request_id: checkId(id, 'request'), ...b, channel: b.channel ?? 'inbox' });
  }

  @Route(ROUTES.answerClarification)
  answer(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const b = validate(ROUTES.answerClarification.body, body);
    return this.approvals.resolve({ actor, request_id: checkId(id, 'request'), action: 'answer', answer: b.answer });
  }
}
