import { SkaldClient, type FetchLike, type WebSocketConstructor } from '@skald/client';
import {
  ROUTES,
  type OperationId,
  type RouteBody,
  type RouteParams,
  type RouteQuery,
  type RouteResponse,
} from '@skald/contracts';
import type { ConfigStore, Credential } from './config.ts';
import { CliError, EXIT, LOGIN_HINT, parseServerUrl } from './errors.ts';

/** What a command reaches the world through: injected, so tests give fakes. */
export interface Runtime {
  env: NodeJS.ProcessEnv;
  store: ConfigStore;
  out: (text: string) => void;
  err: (text: string) => void;
  /** All of standard input (for `-` and `--password-stdin`), at most `max` bytes. */
  readStdin: (max: number) => Promise<string>;
  fetch?: FetchLike;
  WebSocket: WebSocketConstructor;
  now: () => number;
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** The parts of a call of operation `K`, typed by its schemas in `ROUTES`. */
export interface ApiParts<K extends OperationId> {
  params?: RouteParams<K>;
  query?: RouteQuery<K>;
  body?: RouteBody<K>;
}

/**
 * One REST call by its operationId in the contracts' `ROUTES`: the path, method, parameters, body
 * and answer all come from that entry (the method upper-cased, as `fetch` sends `PATCH` only so).
 */
export function api<K extends OperationId>(
  client: SkaldClient,
  op: K,
  parts: ApiParts<K> = {},
): Promise<RouteResponse<K>> {
  const route = ROUTES[op];
  const method = METHODS.find((m) => m === route.method.toUpperCase());
  if (!method) throw new TypeError(`route ${route.path} has no HTTP method: ${route.method}`);
  return client.request<RouteResponse<K>>({ method, path: route.path }, parts);
}

/**
 * The server and credential a command uses: `SKALD_URL` / `SKALD_TOKEN` when set, else what
 * `skald login` stored. A stored credential is never sent to another server than its own.
 */
export async function resolveCredential(rt: Runtime): Promise<Credential> {
  const envUrl = rt.env.SKALD_URL ? parseServerUrl(rt.env.SKALD_URL) : null;
  const envToken = rt.env.SKALD_TOKEN || null;
  const stored = await rt.store.read();
  if (envToken) {
    const url = envUrl ?? stored?.url;
    if (!url) throw new CliError('SKALD_TOKEN is set but no server: set SKALD_URL too', EXIT.usage);
    return { url, token: envToken, kind: 'token' };
  }
  if (!stored) throw new CliError(`not logged in: ${LOGIN_HINT} (or set SKALD_URL and SKALD_TOKEN)`, EXIT.unauthorized);
  if (envUrl && envUrl !== stored.url)
    throw new CliError(
      `logged in to ${stored.url}, not SKALD_URL=${envUrl}: set SKALD_TOKEN for it or run skald login --url ${envUrl}`,
      EXIT.unauthorized,
    );
  if (stored.expires_at && Date.parse(stored.expires_at) <= rt.now())
    throw new CliError(`the login to ${stored.url} expired: ${LOGIN_HINT}`, EXIT.unauthorized);
  return stored;
}

export function clientFor(rt: Runtime, c: Pick<Credential, 'url' | 'token'>): SkaldClient {
  return new SkaldClient({ baseUrl: c.url, token: c.token, fetch: rt.fetch, WebSocket: rt.WebSocket });
}

/** The signed-in client of a command. */
export async function signedIn(rt: Runtime): Promise<{ client: SkaldClient; credential: Credential }> {
  const credential = await resolveCredential(rt);
  return { client: clientFor(rt, credential), credential };
}
