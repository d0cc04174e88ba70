import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Actor } from '@skald/contracts';
import { PUBLIC_ROUTE } from '@skald/service-kit/public-route';
import { ApiError } from '../http/api-error';
import { AuthService, Principal } from './auth.service';

export { Public } from '@skald/service-kit';
export const ADMIN_ONLY = 'skald:admin';
/** The route is for admins only (403 for others). */
export const AdminOnly = (): MethodDecorator & ClassDecorator => SetMetadata(ADMIN_ONLY, true);

export interface AuthedRequest {
  headers: Record<string, string | string[] | undefined>;
  actor?: Actor;
  principal?: Principal;
}

/**
 * Bearer authentication on every route unless its handler or controller is marked `@Public()`.
 * The decision is the route's metadata alone, never the request's path: any spelling that reaches
 * a handler gets that handler's rule.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly auth: AuthService,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const targets = [ctx.getHandler(), ctx.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    const header = req.headers.authorization;
    const value = Array.isArray(header) ? header[0] : header;
    const m = value?.match(/^Bearer\s+(\S+)$/i);
    if (!m?.[1]) throw new ApiError('unauthorized', 'missing bearer token');
    const principal = await this.auth.authenticate(m[1]);
    req.actor = principal.actor;
    req.principal = principal;
    if (this.reflector.getAllAndOverride<boolean>(ADMIN_ONLY, targets) && principal.actor.role !== 'admin') {
      throw new ApiError('forbidden', 'admin only');
    }
    return true;
  }
}
