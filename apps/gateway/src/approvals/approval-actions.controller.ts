import { Body, Controller } from '@nestjs/common';
import { ROUTES } from '@skald/contracts';
import { ClientAddress } from '../auth/actor.decorator';
import { validate } from '../http/validate';
import { Route } from '../http/route.decorator';
import { ApprovalsGateway } from './approvals.gateway';

/** Approve / Reject from a push notification: public, the action token is the credential; throttled per address. */
@Controller()
export class ApprovalActionsController {
  constructor(private readonly approvals: ApprovalsGateway) {}

  @Route(ROUTES.approvalAction)
  act(@Body() body: unknown, @ClientAddress() address: string) {
    return this.approvals.redeemAction(validate(ROUTES.approvalAction.body, body), address);
  }
}
