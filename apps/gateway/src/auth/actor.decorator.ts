import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { Actor } from '@skald/contracts';
import { AuthedRequest } from './auth.guard';

/** The verified caller of the request (set by AuthGuard). */
export const CurrentActor = createParamDecorator((_: unknown, ctx: ExecutionContext): Actor => {
  const actor = ctx.switchToHttp().getRequest<AuthedRequest>().actor;
  if (!actor) throw new Error('CurrentActor used on a public route');
  return actor;
});
