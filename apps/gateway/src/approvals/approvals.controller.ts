import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { Actor, Id, ResolveApprovalInput, ResolveClarificationInput, ResolveToolInput } from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { notFound } from '../http/api-error';
import { validate } from '../http/validate';
import { ApprovalsGateway } from './approvals.gateway';

const checkId = (id: string, what: string): string => {
  if (!Id.safeParse(id).success) throw notFound(what);
  return id;
};

/** Answers to human requests (by tool call id from the chat card, by request id from the inbox) and the inbox. */
@Controller('api')
export class ApprovalsController {
  constructor(private readonly approvals: ApprovalsGateway) {}

  @Post('tools/:id/resolve')
  @HttpCode(200)
  resolveTool(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const b = validate(ResolveToolInput, body);
    return this.approvals.resolve({ actor, tool_call_id: checkId(id, 'tool call'), ...b });
  }

  @Get('inbox')
  inbox(@CurrentActor() actor: Actor) {
    return this.approvals.inbox(actor);
  }

  @Post('inbox/approvals/:id/resolve')
  @HttpCode(200)
  resolveApproval(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const b = validate(ResolveApprovalInput, body);
    return this.approvals.resolve({ actor, request_id: checkId(id, 'request'), ...b });
  }

  @Post('inbox/clarifications/:id/resolve')
  @HttpCode(200)
  answer(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    const b = validate(ResolveClarificationInput, body);
    return this.approvals.resolve({ actor, request_id: checkId(id, 'request'), action: 'answer', answer: b.answer });
  }
}
