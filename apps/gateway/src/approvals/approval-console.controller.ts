import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { z } from 'zod';
import {
  Actor,
  ApprovalRuleInput,
  ApprovalRulePatch,
  AuditQuery,
  CreateBypassInput,
  Id,
  RuleTestInput,
} from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { AdminOnly } from '../auth/auth.guard';
import { notFound } from '../http/api-error';
import { validate } from '../http/validate';
import { ApprovalsGateway } from './approvals.gateway';

const checkId = (id: string, what: string): string => {
  if (!Id.safeParse(id).success) throw notFound(what);
  return id;
};
const BypassQuery = z.object({ session_id: Id.optional() });

/** The security console: rules (admin only), rule test, tool catalog, bypasses, audit. */
@Controller('api/approval')
export class ApprovalConsoleController {
  constructor(private readonly approvals: ApprovalsGateway) {}

  @AdminOnly()
  @Get('rules')
  rules(@CurrentActor() actor: Actor) {
    return this.approvals.rules(actor);
  }

  @AdminOnly()
  @Post('rules')
  @HttpCode(201)
  createRule(@CurrentActor() actor: Actor, @Body() body: unknown) {
    return this.approvals.createRule({ actor, rule: validate(ApprovalRuleInput, body) });
  }

  @Post('rules/test')
  @HttpCode(200)
  testRule(@CurrentActor() actor: Actor, @Body() body: unknown) {
    return this.approvals.testRule({ actor, ...validate(RuleTestInput, body) });
  }

  @AdminOnly()
  @Patch('rules/:id')
  updateRule(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.approvals.updateRule({ actor, id: checkId(id, 'rule'), patch: validate(ApprovalRulePatch, body) });
  }

  @AdminOnly()
  @Delete('rules/:id')
  @HttpCode(204)
  async deleteRule(@CurrentActor() actor: Actor, @Param('id') id: string) {
    await this.approvals.deleteRule(actor, checkId(id, 'rule'));
  }

  @Get('tools')
  tools(@CurrentActor() actor: Actor) {
    return this.approvals.tools(actor);
  }

  @Get('audit')
  audit(@CurrentActor() actor: Actor, @Query() query: unknown) {
    const q = validate(AuditQuery, query);
    return this.approvals.audit({ actor, session_id: q.session_id, page: q.page, per_page: q.per_page });
  }

  @Get('bypasses')
  bypasses(@CurrentActor() actor: Actor, @Query() query: unknown) {
    return this.approvals.bypasses(actor, validate(BypassQuery, query).session_id);
  }

  @Post('bypasses')
  @HttpCode(201)
  openBypass(@CurrentActor() actor: Actor, @Body() body: unknown) {
    const b = validate(CreateBypassInput, body);
    return this.approvals.openBypass(actor, b.session_id, b.scope, b.secs);
  }

  @Delete('bypasses/:id')
  @HttpCode(204)
  async revokeBypass(@CurrentActor() actor: Actor, @Param('id') id: string) {
    await this.approvals.revokeBypass(actor, checkId(id, 'bypass'));
  }
}
