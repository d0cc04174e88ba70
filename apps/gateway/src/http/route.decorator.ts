import { applyDecorators, HttpCode, RequestMapping, RequestMethod, SetMetadata } from '@nestjs/common';
import { expressPath, RouteDef, RouteMethod } from '@skald/contracts';
import { AdminOnly, Public } from '../auth/auth.guard';

/** The route-table entry a handler serves (read by the route tests). */
export const ROUTE_DEF = 'skald:route';

const METHODS: Record<RouteMethod, RequestMethod> = {
  get: RequestMethod.GET,
  post: RequestMethod.POST,
  put: RequestMethod.PUT,
  patch: RequestMethod.PATCH,
  delete: RequestMethod.DELETE,
};

/**
 * Binds a handler to its entry of the route table (`ROUTES` in contracts): its method and path
 * (the controller has no prefix, so the path is spelled once, in the table), its success status
 * and its auth (`public` → `@Public()`, `admin` → `@AdminOnly()`).
 */
export function Route(route: RouteDef): MethodDecorator {
  return applyDecorators(
    RequestMapping({ path: expressPath(route.path), method: METHODS[route.method] }),
    HttpCode(route.response.status),
    SetMetadata(ROUTE_DEF, route),
    ...(route.auth === 'public' ? [Public()] : route.auth === 'admin' ? [AdminOnly()] : []),
  );
}
