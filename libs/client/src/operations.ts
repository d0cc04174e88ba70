import type { OperationId, RouteBody, RouteParams, RouteQuery, RouteResponse } from '@skald/contracts';
import { ROUTE_TABLE, type RouteWire } from '@skald/contracts/route-table';
import type { RequestParts, RestCore } from './rest.ts';

type Table = typeof ROUTE_TABLE;
/** A part of a call: absent when the operation takes none, optional when everything in it is. */
type Part<Name extends string, T> = [T] extends [never]
  ? { [P in Name]?: never }
  : object extends T
    ? { [P in Name]?: T }
    : { [P in Name]: T };

/** What a call of operation `K` takes: its path parameters, query and body, typed from its route entry. */
export type CallParts<K extends OperationId> = Part<'params', RouteParams<K>> &
  Part<'query', RouteQuery<K>> &
  Part<'body', RouteBody<K>>;

/** The arguments after the operationId: none needed when every part is optional. */
export type CallArgs<K extends OperationId> =
  object extends CallParts<K> ? [parts?: CallParts<K>] : [parts: CallParts<K>];

/**
 * What a call of `K` answers: the JSON of its answer schema, a `Blob` for a file, `undefined` for
 * no body, and the parsed JSON (`unknown`) for an answer this table has no schema of.
 */
export type CallResult<K extends OperationId> = Table[K]['response'] extends 'unknown' ? unknown : RouteResponse<K>;

/** The operations that answer in pages (`paging` in their route). */
export type PagedOperationId = {
  [K in OperationId]: Table[K] extends { paging: object } ? K : never;
}[OperationId];

/** An item of a paged operation's answer. */
export type PageItem<K extends PagedOperationId> = CallResult<K> extends { items: Array<infer I> } ? I : never;

export interface PagesOptions {
  /** The most pages read (default 100); the iteration ends after them. */
  maxPages?: number;
}

/** The route of an operation, or a TypeError naming an operationId this version does not know. */
function routeOf(op: string): RouteWire {
  if (!Object.prototype.hasOwnProperty.call(ROUTE_TABLE, op)) throw new TypeError(`unknown operation "${op}"`);
  return ROUTE_TABLE[op as OperationId];
}

/**
 * A call's parts checked against its route: a body to a route that takes none, a multipart route
 * without `FormData`, or a `FormData` to a JSON route is a TypeError naming the operation.
 */
function checked(op: string, route: RouteWire, parts: RequestParts): RequestParts {
  const multipart = parts.body instanceof FormData;
  if (route.body === undefined && parts.body !== undefined) throw new TypeError(`${op} takes no body`);
  if (route.body === 'multipart' && !multipart) throw new TypeError(`${op} takes a FormData body (multipart)`);
  if (route.body === 'json' && multipart) throw new TypeError(`${op} takes a JSON body, not FormData`);
  return parts;
}

/** Calls one operation by its operationId and reads its answer by the route's kind. */
export async function callOperation(rest: RestCore, op: string, parts: RequestParts = {}): Promise<unknown> {
  const route = routeOf(op);
  const res = await rest.fetch(route, checked(op, route, parts));
  if (route.response === 'binary') return res.blob();
  if (route.response === 'none' || res.status === 204) return undefined;
  const text = await res.text();
  if (text === '') return undefined;
  // a download in another format (an export as Markdown) is its text
  if (!/json/i.test(res.headers.get('content-type') ?? '')) return text;
  return JSON.parse(text) as unknown;
}

/** The raw response of one operation (a stream, a download), after the status check. */
export function fetchOperation(rest: RestCore, op: string, parts: RequestParts = {}): Promise<Response> {
  const route = routeOf(op);
  return rest.fetch(route, checked(op, route, parts));
}

interface AnyPage {
  items: Array<{ id?: unknown }>;
  total?: number;
  has_more?: boolean;
}

/**
 * The pages of a paged operation in order, from the one `parts` names: `page` routes go on while
 * the items read are fewer than `total`; `before` routes while `has_more`, with `before` set to the
 * oldest item's id. Ends on an empty page, a cursor that does not move, or after `maxPages`.
 */
export async function* operationPages(
  rest: RestCore,
  op: string,
  parts: RequestParts,
  options: PagesOptions = {},
): AsyncGenerator<unknown, void, undefined> {
  const route = routeOf(op);
  const paging = route.paging;
  if (!paging) throw new TypeError(`${op} does not answer in pages`);
  const maxPages = options.maxPages ?? 100;
  if (!(maxPages >= 1)) throw new RangeError('maxPages must be at least 1');
  const query: Record<string, unknown> = { ...parts.query };
  let seen = 0;
  for (let n = 0; n < maxPages; n++) {
    const page = (await callOperation(rest, op, { ...parts, query })) as AnyPage;
    yield page;
    const items = Array.isArray(page?.items) ? page.items : [];
    if (items.length === 0) return;
    if (paging.by === 'page') {
      seen += items.length;
      if (typeof page.total !== 'number' || seen >= page.total) return;
      query.page = Number(query.page ?? 1) + 1;
    } else {
      if (page.has_more !== true) return;
      const cursor = (paging.cursor === 'first' ? items[0] : items[items.length - 1])?.id;
      if (typeof cursor !== 'string' || cursor === query.before) return;
      query.before = cursor;
    }
  }
}
