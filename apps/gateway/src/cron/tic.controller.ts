import { Controller, HttpCode, Post } from '@nestjs/common';
import { Actor } from '@skald/contracts';
import { Bus, BusRequestError } from '@skald/messaging';
import { CurrentActor } from '../auth/actor.decorator';
import { ApiError } from '../http/api-error';

/** The periodic system tick, run now through the scheduler's job path. */
@Controller('api/tic')
export class TicController {
  constructor(private readonly bus: Bus) {}

  @Post('trigger')
  @HttpCode(202)
  async trigger(@CurrentActor() actor: Actor) {
    try {
      return await this.bus.call('tic.trigger', { actor });
    } catch (e) {
      if (e instanceof BusRequestError)
        throw new ApiError('unavailable', 'the scheduler is not available; retry shortly', undefined, 2);
      throw e;
    }
  }
}
