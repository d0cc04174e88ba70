import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Actor } from '@skald/contracts';
import { ApiError } from '../http/api-error';
import { AuthService } from './auth.service';

export const PUBLIC = 'skald:public';
export const ADMIN_ONLY = 'skald:admin';
/** The route needs no credentials. */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC, true);
/** The route is for admins only (403 for others). */
export const AdminOnly = (): MethodDecorator & ClassDecorator => SetMetadata(ADMIN_ONLY, true);

export interface AuthedRequest {
  path?: string;
  headers: Record<string, string | string[] | undefined>;
  actor?: Actor;
}

/** Bearer authentication on every `/api` route unless marked public. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly auth: AuthService,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const targets = [ctx.getHandler(), ctx.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC, targets)) return true;
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    // Operations endpoints (/healthz, /readyz, /metrics) live outside /api and guard themselves.
    if (!req.path?.startsWith('/api/')) return true;
    const header = req.headers.authorization;
    const value = Array.isArray(header) ? header[0] : header;
    const m = value?.match(/^Bearer\s+(\S+)$/i);
    if (!m?.[1]) throw new ApiError('unauthorized', 'missing bearer token');
    const principal = await this.auth.authenticate(m[1]);
    req.actor = principal.actor;
    if (this.reflector.getAllAndOverride<boolean>(ADMIN_ONLY, targets) && principal.actor.role !== 'admin') {
      throw new ApiError('forbidden', 'admin only');
    }
    return true;
  }
}
