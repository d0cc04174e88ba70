import { z } from 'zod';
import { createDocument } from 'zod-openapi';
import type { ZodOpenApiOperationObject, ZodOpenApiResponsesObject } from 'zod-openapi';
import * as contracts from '@skald/contracts';
import { ErrorResponse, ROUTES, RouteDef, USER_CAPS } from '@skald/contracts';

/** Every zod schema a schema is built from (object fields, items, union options, wrapped types…), itself included. */
function reachable(root: z.ZodType, seen = new Set<z.ZodType>()): Set<z.ZodType> {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v instanceof z.ZodType) {
      if (seen.has(v)) continue;
      seen.add(v);
      stack.push(v._zod.def);
    } else if (Array.isArray(v)) stack.push(...(v as unknown[]));
    else if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype)
      stack.push(...Object.values(v as Record<string, unknown>));
  }
  return seen;
}

/**
 * The components: every schema exported by `@skald/contracts` that an operation uses, under its
 * export name (the first one, when a schema has two), so a schema shared by operations is one
 * `$ref` and its name is the one the code uses.
 */
function components(routes: readonly RouteDef[]): Record<string, z.ZodType> {
  const used = new Set<z.ZodType>();
  for (const r of routes)
    for (const s of [r.params, r.query, r.body, r.response.schema, ErrorResponse])
      if (s instanceof z.ZodType) reachable(s, used);
  const out: Record<string, z.ZodType> = {};
  const named = new Set<z.ZodType>();
  for (const [name, value] of Object.entries(contracts)) {
    if (!(value instanceof z.ZodType) || !used.has(value) || named.has(value)) continue;
    // parameter objects are split into one parameter per field; their fields are the components
    if (routes.some((r) => r.params === value || r.query === value)) continue;
    named.add(value);
    out[name] = value;
  }
  return out;
}

const binary = { type: 'string', format: 'binary' } as const;
const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });

/** The answers of one operation: its success and the errors its metadata says it can give. */
function responses(r: RouteDef): ZodOpenApiResponsesObject {
  const error = (description: string) => ({ description, ...json(ErrorResponse) });
  const out: ZodOpenApiResponsesObject = {
    [String(r.response.status)]: {
      description: 'OK',
      ...(r.response.schema ? json(r.response.schema) : {}),
      ...(r.response.binary ? { content: { '*/*': { schema: binary } } } : {}),
    },
    '400': error('invalid_input: the field named in `error.field` is wrong'),
  };
  if (r.auth !== 'public') out['401'] = error('unauthorized: no token, or one that is not valid');
  if (r.auth === 'admin') out['403'] = error('forbidden: admins only');
  if (/\{(?!source\})\w+\}/.test(r.path)) out['404'] = error("not_found (also another user's id)");
  if (r.sized) out['413'] = error('too_large');
  if (r.throttled)
    out['429'] = {
      ...error(
        'too many failed password checks for this account from this address, for this address or for this account; retry after Retry-After seconds',
      ),
      headers: { 'Retry-After': { schema: { type: 'integer' as const } } },
    };
  if (r.signInLimited)
    out['429'] = {
      ...error(
        'rate_limited: too many sign-ins started from this address this minute, or under way from it; retry after Retry-After seconds',
      ),
      headers: { 'Retry-After': { schema: { type: 'integer' as const } } },
    };
  if (r.capped)
    out['429'] = error(
      `rate_limited: a per-user limit is reached: ${r.capped.map((c) => `${c} (${USER_CAPS[c].env})`).join(', ')}`,
    );
  out['503'] = error('a dependency is down; retry after Retry-After');
  return out;
}

function operation(operationId: string, r: RouteDef): ZodOpenApiOperationObject {
  return {
    operationId,
    tags: [r.tag],
    summary: r.summary,
    ...(r.auth === 'public' ? { security: [] } : {}),
    'x-skald-auth': r.auth,
    ...(r.params || r.query
      ? { requestParams: { ...(r.params ? { path: r.params } : {}), ...(r.query ? { query: r.query } : {}) } }
      : {}),
    ...(r.body === 'multipart'
      ? {
          requestBody: {
            required: true,
            content: {
              'multipart/form-data': {
                schema: { type: 'object', properties: { file: binary }, required: ['file'] },
              },
            },
          },
        }
      : r.body
        ? { requestBody: { required: true, ...json(r.body) } }
        : {}),
    responses: responses(r),
  };
}

/** The REST contract as an OpenAPI 3.1 document, generated from the route table and its zod schemas. */
export function buildOpenApiDocument(routes: Readonly<Record<string, RouteDef>> = ROUTES) {
  const paths: Record<string, Record<string, ZodOpenApiOperationObject>> = {};
  for (const [operationId, r] of Object.entries(routes)) (paths[r.path] ??= {})[r.method] = operation(operationId, r);
  const tags = [...new Set(Object.values(routes).map((r) => r.tag))].map((name) => ({ name }));
  return pruned(
    createDocument(
      {
        openapi: '3.1.0',
        info: {
          title: 'Skald API',
          version: '0.1.0',
          description:
            'REST part of the Skald client protocol (every route, its auth in `x-skald-auth`). WebSocket: `GET /api/ws?source=` (docs/protocol.md).',
        },
        tags,
        security: [{ bearer: [] }],
        paths,
        components: {
          schemas: components(Object.values(routes)),
          securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
        },
      },
      // a component is rendered for answers too; what a transform of a request field makes is any JSON there
      { allowEmptySchema: { pipe: { output: true } } },
    ),
  );
}

const REF = '#/components/schemas/';
const OUTPUT = 'Output';

/** The components the paths reach, through `$ref`s, directly or through other components. */
function reached(paths: unknown, schemas: Record<string, unknown>): Set<string> {
  const used = new Set<string>();
  const stack = [JSON.stringify(paths)];
  while (stack.length > 0)
    for (const m of stack.pop()!.matchAll(/"#\/components\/schemas\/([\w.-]+)"/g))
      if (!used.has(m[1])) {
        used.add(m[1]);
        stack.push(JSON.stringify(schemas[m[1]]));
      }
  return used;
}

/**
 * The document with only the components an operation reaches. zod-openapi renders each component
 * for requests and, where the two differ, `<Name>Output` for answers; a schema that is only ever
 * an answer keeps its own name.
 */
function pruned<D extends { paths?: unknown; components?: { schemas?: Record<string, unknown> } }>(doc: D): D {
  const before = reached(doc.paths, doc.components?.schemas ?? {});
  const renames = [...before].filter((n) => n.endsWith(OUTPUT) && !before.has(n.slice(0, -OUTPUT.length)));
  let text = JSON.stringify(doc);
  for (const n of renames) text = text.split(`"${REF}${n}"`).join(`"${REF}${n.slice(0, -OUTPUT.length)}"`);
  const out = JSON.parse(text) as D;
  const schemas = out.components?.schemas ?? {};
  for (const n of renames) schemas[n.slice(0, -OUTPUT.length)] = schemas[n];
  const used = reached(out.paths, schemas);
  for (const n of Object.keys(schemas)) if (!used.has(n)) delete schemas[n];
  return out;
}
