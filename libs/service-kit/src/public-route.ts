import { SetMetadata } from '@nestjs/common';

/** Metadata key of routes that need no credentials; every other route of an app is authenticated. */
export const PUBLIC_ROUTE = 'skald:public';

/**
 * Marks a route (or a whole controller) as answering without credentials. An app's auth guard
 * lets through exactly the routes that carry this mark; no path, prefix or pattern is public.
 */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC_ROUTE, true);
