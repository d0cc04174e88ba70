import 'reflect-metadata';
import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ModulesContainer, Reflector } from '@nestjs/core';
import type { RouteDef } from '@skald/contracts';
import { PUBLIC_ROUTE } from '@skald/service-kit/public-route';
import { ADMIN_ONLY } from '../../apps/gateway/src/auth/auth.guard';
import { ROUTE_DEF } from '../../apps/gateway/src/http/route.decorator';
import type { InProcessGateway } from './gateway-app';

export type Auth = 'public' | 'user' | 'admin';
export interface RouteEntry {
  method: string;
  /** Express path, e.g. `/api/admin/users/:id`. */
  path: string;
  controller: string;
  auth: Auth;
  /** The route-table entry the handler is bound to (`@Route`), if any. */
  route?: RouteDef;
}

/**
 * Every route of the running app, read from Nest's own metadata (controllers of every module,
 * their handlers' path and method) and checked against the live Express router's stack, so a
 * route added anywhere is attacked without editing this file.
 */
export function routeTable(gw: InProcessGateway): { routes: RouteEntry[]; controllers: string[] } {
  const reflector = gw.app.get(Reflector);
  const routes: RouteEntry[] = [];
  const controllers: string[] = [];
  for (const mod of gw.app.get(ModulesContainer).values()) {
    for (const wrapper of mod.controllers.values()) {
      const ctrl = wrapper.metatype as (new (...a: unknown[]) => unknown) | null;
      if (!ctrl) continue;
      controllers.push(ctrl.name);
      const base = String(Reflect.getMetadata(PATH_METADATA, ctrl) ?? '');
      const proto = ctrl.prototype as Record<string, unknown>;
      for (const key of Object.getOwnPropertyNames(proto)) {
        const handler = proto[key];
        if (key === 'constructor' || typeof handler !== 'function') continue;
        const sub = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (sub === undefined || method === undefined) continue;
        const path = `/${[base, sub]
          .map((s) => s.replace(/^\/|\/$/g, ''))
          .filter(Boolean)
          .join('/')}`;
        const targets = [handler as () => void, ctrl];
        const auth: Auth = reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)
          ? 'public'
          : reflector.getAllAndOverride<boolean>(ADMIN_ONLY, targets)
            ? 'admin'
            : 'user';
        const route = Reflect.getMetadata(ROUTE_DEF, handler) as RouteDef | undefined;
        routes.push({ method: RequestMethod[method].toLowerCase(), path, controller: ctrl.name, auth, route });
      }
    }
  }
  return { routes, controllers };
}
