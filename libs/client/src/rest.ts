import { SkaldApiError } from './errors.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * What a REST call needs to know of its route: the method and the path under the gateway's origin,
 * with `{name}` placeholders for path parameters (`/api/sessions/{id}`). A route table entry
 * (`{method, path, …schemas}`) is one of these.
 */
export interface RouteRef {
  /** Either case: a `ROUTES` entry of `@skald/contracts` has `get`, the route table `GET`. */
  readonly method: HttpMethod | Lowercase<HttpMethod>;
  readonly path: string;
}

/** The parts of one call: path parameters by placeholder name, the query, and a JSON body. */
export interface RequestParts {
  params?: Readonly<Record<string, string>>;
  /** Strings, numbers and booleans are sent; `undefined` is left out. */
  query?: Readonly<Record<string, unknown>>;
  body?: unknown;
}

/** The `fetch` the SDK calls: the platform's (browsers, React Native, Node 18+) or one the caller injects. */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * The path of a route with its parameters put in, each encoded as one path segment. A placeholder
 * without a value, a value that is empty, `.` or `..` (a URL parser would move up a segment, however
 * it is encoded), or a value given for no placeholder is an error naming it.
 */
export function fillPath(path: string, params: Readonly<Record<string, string>> = {}): string {
  const used = new Set<string>();
  const filled = path.replace(PLACEHOLDER, (_, name: string) => {
    const v = Object.prototype.hasOwnProperty.call(params, name) ? params[name] : undefined;
    if (typeof v !== 'string' || v === '') throw new TypeError(`path parameter "${name}" of ${path} is missing`);
    if (v === '.' || v === '..') throw new TypeError(`path parameter "${name}" cannot be "${v}"`);
    used.add(name);
    return encodeURIComponent(v);
  });
  for (const name of Object.keys(params))
    if (!used.has(name)) throw new TypeError(`path parameter "${name}" is not in ${path}`);
  return filled;
}

/** The query string of a call (`?a=1&b=x`), leaving out parameters whose value is undefined. */
export function queryString(query: RequestParts['query']): string {
  if (!query) return '';
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
      throw new TypeError(`query parameter "${k}" must be a string, number or boolean`);
    q.append(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

export interface RestOptions {
  /** The gateway's origin (`https://skald.example.com`); `''` for the page's own origin in a browser. */
  baseUrl: string;
  /** The bearer credential (a login's JWT or an API token); null before login. */
  token: () => string | null;
  fetch: FetchLike;
  /** Called when the gateway answers 401 (the credential ended), before the error is thrown. */
  onUnauthorized?: () => void;
}

/** Reads a failed response as the error the gateway sent (`{error: {code, message, field?}}`). */
export async function apiError(res: Response): Promise<SkaldApiError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  const e = typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
  const err = typeof e === 'object' && e !== null ? (e as Record<string, unknown>) : {};
  const code = typeof err.code === 'string' ? err.code : 'error';
  const message = typeof err.message === 'string' ? err.message : res.statusText || `HTTP ${res.status}`;
  const field = typeof err.field === 'string' ? err.field : undefined;
  const retry = Number(res.headers.get('retry-after'));
  return new SkaldApiError(res.status, code, message, field, Number.isFinite(retry) && retry >= 0 ? retry : undefined);
}

/**
 * The REST core: one call of one route with the caller's bearer token. A JSON body is sent as JSON,
 * a `FormData` as multipart; `204` answers undefined; anything but 2xx throws `SkaldApiError`.
 */
export class RestCore {
  constructor(private readonly options: RestOptions) {}

  get baseUrl(): string {
    return this.options.baseUrl;
  }

  /** The raw response of a call (a download, an export), after the status check. */
  async fetch(route: RouteRef, parts: RequestParts = {}): Promise<Response> {
    const url = `${this.options.baseUrl}${fillPath(route.path, parts.params)}${queryString(parts.query)}`;
    const token = this.options.token();
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    let body: RequestInit['body'];
    if (parts.body instanceof FormData) body = parts.body;
    else if (parts.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(parts.body);
    }
    const method = route.method.toUpperCase();
    const res = await this.options.fetch(url, { method, headers, body });
    if (!res.ok) {
      if (res.status === 401) this.options.onUnauthorized?.();
      throw await apiError(res);
    }
    return res;
  }

  /** One call answered with JSON (`T`), or undefined for `204`. */
  async request<T>(route: RouteRef, parts: RequestParts = {}): Promise<T> {
    const res = await this.fetch(route, parts);
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }
}
