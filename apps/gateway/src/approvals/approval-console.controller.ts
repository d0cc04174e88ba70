import { Body, Controller, Param, Query } from '@nestjs/common';
import { Actor, Id, ROUTES } from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { ApiError, notFound } from '../http/api-error';
import { validate } from '../http/validate';
import { ApprovalsGateway } from './approvals.gateway';
import { Route } from '../http/route.decorator';

const checkId = (id: string, what: string): string => {
  if (!Id.safeParse(id).success) throw notFound(what);
  return id;
};

/** The security console: rules (admin only), rule test, tool catalog, bypasses, audit. */
@Controller()
export class ApprovalConsoleController {
  constructor(private readonly approvals: ApprovalsGateway) {}

  @Route(ROUTES.listApprovalRules)
  rules(@CurrentActor() actor: Actor) {
    return this.approvals.rules(actor);
  }

  @Route(ROUTES.createApprovalRule)
  createRule(@CurrentActor() actor: Actor, @Body() body: unknown) {
    return this.approvals.createRule({ actor, rule: validate(ROUTES.createApprovalRule.body, body) });
  }

  @Route(ROUTES.testApprovalRules)
  testRule(@CurrentActor() actor: Actor, @Body() body: unknown) {
    return this.approvals.testRule(actor, validate(ROUTES.testApprovalRules.body, body));
  }

  @Route(ROUTES.updateApprovalRule)
  updateRule(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.approvals.updateRule({
      actor,
      id: checkId(id, 'rule'),
      patch: validate(ROUTES.updateApprovalRule.body, body),
    });
  }

  @Route(ROUTES.deleteApprovalRule)
  async deleteRule(@CurrentActor() actor: Actor, @Param('id') id: string) {
    await this.approvals.deleteRule(actor, checkId(id, 'rule'));
  }

  @Route(ROUTES.listApprovalTools)
  tools(@CurrentActor() actor: Actor) {
    return this.approvals.tools(actor);
  }

  @Route(ROUTES.listAudit)
  audit(@CurrentActor() actor: Actor, @Query() query: unknown) {
    const q = validate(ROUTES.listAudit.query, query);
    if (actor.role !== 'admin' && q.user_id !== undefined && q.user_id !== actor.userId)
      throw new ApiError('forbidden', "another user's audit is for admins", 'user_id');
    return this.approvals.audit({ actor, ...q });
  }

  @Route(ROUTES.listBypasses)
  bypasses(@CurrentActor() actor: Actor, @Query() query: unknown) {
    return this.approvals.bypasses(actor, validate(ROUTES.listBypasses.query, query).session_id);
  }

  @Route(ROUTES.openBypass)
  openBypass(@CurrentActor() actor: Actor, @Body() body: unknown) {
    const b = validate(ROUTES.openBypass.body, body);
    return this.approvals.openBypass(actor, b.session_id, b.scope, b.secs);
  }

  @Route(ROUTES.revokeBypass)
  async revokeBypass(@CurrentActor() actor: Actor, @Param('id') id: string) {
    await this.approvals.revokeBypass(actor, checkId(id, 'bypass'));
  }
}
