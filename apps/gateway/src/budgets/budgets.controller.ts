import { Body, Controller, Param, Query } from '@nestjs/common';
import { Actor, Id, ROUTES } from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { ApiError } from '../http/api-error';
import { Route } from '../http/route.decorator';
import { validate } from '../http/validate';
import { BudgetsService } from './budgets.service';

/** A user id from the path: not a UUID → 404, like an id that names no user. */
const userId = (id: string): string => {
  if (!Id.safeParse(id).success) throw new ApiError('not_found', 'user not found');
  return id;
};

/** LLM budgets: a user's own (`/llm/budget`), and for admins anyone's limits and who is near one. */
@Controller()
export class BudgetsController {
  constructor(private readonly budgets: BudgetsService) {}

  @Route(ROUTES.myBudget)
  mine(@CurrentActor() actor: Actor) {
    return this.budgets.mine(actor);
  }

  @Route(ROUTES.adminBudgets)
  near(@CurrentActor() actor: Actor, @Query() query: unknown) {
    return this.budgets.near(actor, validate(ROUTES.adminBudgets.query, query).min_percent);
  }

  @Route(ROUTES.getUserBudget)
  ofUser(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.budgets.ofUser(actor, userId(id));
  }

  @Route(ROUTES.putUserBudget)
  set(@CurrentActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.budgets.setUser(actor, userId(id), validate(ROUTES.putUserBudget.body, body));
  }

  @Route(ROUTES.deleteUserBudget)
  async clear(@CurrentActor() actor: Actor, @Param('id') id: string): Promise<void> {
    await this.budgets.setUser(actor, userId(id), null);
  }
}
