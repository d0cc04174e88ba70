import { Controller, HttpCode, Post } from '@nestjs/common';
import { Actor } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import { CurrentActor } from '../auth/actor.decorator';
import { callService } from '../http/api-error';

/** The periodic system tick, run now through the scheduler's job path. */
@Controller('api/tic')
export class TicController {
  constructor(private readonly bus: Bus) {}

  @Post('trigger')
  @HttpCode(202)
  async trigger(@CurrentActor() actor: Actor) {
    return callService('the scheduler is not available; retry shortly', () => this.bus.call('tic.trigger', { actor }));
  }
}
