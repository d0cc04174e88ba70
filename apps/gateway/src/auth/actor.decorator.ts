import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { Actor } from '@skald/contracts';
import type { AuthedRequest } from './auth.guard';
import type { Principal } from './auth.service';

/** The verified caller of the request (set by AuthGuard). */
export const CurrentActor = createParamDecorator((_: unknown, ctx: ExecutionContext): Actor => {
  const actor = ctx.switchToHttp().getRequest<AuthedRequest>().actor;
  if (!actor) throw new Error('CurrentActor used on a public route');
  return actor;
});

/** The verified credential of the request (set by AuthGuard): who, until when, issued under what. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!principal) throw new Error('CurrentPrincipal used on a public route');
  return principal;
});

/** The client's address as Express sees it (`SKALD_TRUST_PROXY` decides whether X-Forwarded-For counts). */
export const ClientAddress = createParamDecorator((_: unknown, ctx: ExecutionContext): string => {
  const req = ctx.switchToHttp().getRequest<{ ip?: string; socket?: { remoteAddress?: string } }>();
  return req.ip ?? req.socket?.remoteAddress ?? 'unknown';
});
