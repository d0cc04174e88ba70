import { Controller, Param, Query, Res } from '@nestjs/common';
import { Actor, Id, ROUTES } from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { ApiError } from '../http/api-error';
import { Route } from '../http/route.decorator';
import { validate } from '../http/validate';
import { usageCsv } from './usage-csv';
import { UsageService } from './usage.service';

interface HeaderRes {
  setHeader(name: string, value: string): void;
}

/** LLM usage: a user's own (`/llm/usage`) and, for admins, anyone's and everyone's. */
@Controller()
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  @Route(ROUTES.myUsage)
  mine(@CurrentActor() actor: Actor, @Query() query: unknown) {
    const q = validate(ROUTES.myUsage.query, query);
    return this.usage.mine(actor, q.from, q.until);
  }

  @Route(ROUTES.adminUsage)
  overview(@CurrentActor() actor: Actor, @Query() query: unknown) {
    const q = validate(ROUTES.adminUsage.query, query);
    return this.usage.overview(actor, q.from, q.until, q.top);
  }

  @Route(ROUTES.adminUserUsage)
  ofUser(@CurrentActor() actor: Actor, @Param('id') id: string, @Query() query: unknown) {
    if (!Id.safeParse(id).success) throw new ApiError('not_found', 'user not found');
    const q = validate(ROUTES.adminUserUsage.query, query);
    return this.usage.ofUser(actor, id, q.from, q.until);
  }

  /** A download: never rendered by the browser as a page. */
  @Route(ROUTES.adminUsageExport)
  async export(@CurrentActor() actor: Actor, @Query() query: unknown, @Res({ passthrough: true }) res: HeaderRes) {
    const q = validate(ROUTES.adminUsageExport.query, query);
    const report =
      q.by === 'user'
        ? await this.usage.everyUser(actor, q.from, q.until)
        : await this.usage.overview(actor, q.from, q.until, 0);
    res.setHeader('content-type', 'text/csv; charset=utf-8');
    res.setHeader('content-disposition', `attachment; filename="usage-${q.by}-${q.from}-${q.until}.csv"`);
    res.setHeader('x-content-type-options', 'nosniff');
    return usageCsv(report, q.by);
  }
}
