import { Controller } from '@nestjs/common';
import { Actor, ROUTES } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { CurrentActor } from '../auth/actor.decorator';
import { callService } from '../http/api-error';
import { Route } from '../http/route.decorator';

/** The periodic system tick, run now through the scheduler's job path. */
@Controller()
export class TicController {
  constructor(private readonly bus: Bus) {}

  @Route(ROUTES.triggerTic)
  async trigger(@CurrentActor() actor: Actor) {
    return callService('the scheduler is not available; retry shortly', () => this.bus.call('tic.trigger', { actor }));
  }
}
