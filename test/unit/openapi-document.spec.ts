// The OpenAPI document is generated from the route table (ROUTES in libs/contracts) and its zod
// schemas. This checks it with a maintained OpenAPI 3.1 validator and against the table: one
// operation per route, each with its operationId, tag, auth, typed path and query parameters, its
// body and answer; and schemas a route shares with another are components, not inlined copies.
import { Validator } from '@seriousme/openapi-schema-validator';
import { z } from 'zod';
import { OPERATION_IDS, ROUTES, RouteDef } from '@skald/contracts';
import { buildOpenApiDocument } from '../../apps/gateway/src/http/openapi';

interface Operation {
  operationId: string;
  tags: string[];
  summary: string;
  security?: unknown[];
  'x-skald-auth': string;
  parameters?: Array<{ name: string; in: string; required?: boolean; schema: Record<string, unknown> }>;
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Record<string, unknown>> };
  tags: Array<{ name: string }>;
}

type Spec = Parameters<Validator['validate']>[0];
const doc = buildOpenApiDocument() as unknown as Doc;
const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
  Object.entries(ops).map(([method, op]) => ({ method, path, op })),
);
const routes = Object.entries(ROUTES as Record<string, RouteDef>);

/** A schema with every `$ref` to a component replaced by the component (cycles left as refs). */
function deref(schema: unknown, seen: string[] = []): unknown {
  if (Array.isArray(schema)) return schema.map((s) => deref(s, seen));
  if (!schema || typeof schema !== 'object') return schema;
  const s = schema as Record<string, unknown>;
  const ref = typeof s.$ref === 'string' ? s.$ref.replace('#/components/schemas/', '') : null;
  if (ref && !seen.includes(ref)) {
    const { $ref: _ignored, ...rest } = s;
    return { ...(deref(doc.components.schemas[ref], [...seen, ref]) as object), ...(deref(rest, seen) as object) };
  }
  return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, deref(v, seen)]));
}

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document (@seriousme/openapi-schema-validator), every $ref resolving', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as unknown as Spec);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    // a broken document is refused: the validator does look
    const broken = structuredClone(doc);
    broken.paths['/api/inbox'].get.responses = { '200': { content: { 'application/json': { schema: 7 } } } };
    expect((await new Validator().validate(broken as unknown as Spec)).valid).toBe(false);
    const dangling = JSON.parse(
      JSON.stringify(doc).replace('#/components/schemas/InboxDto"', '#/components/schemas/Nope"'),
    ) as Spec;
    expect((await new Validator().validate(dangling)).valid).toBe(false);
  });

  it('has exactly one operation per route of the table, under its operationId, tag and auth', () => {
    expect(operations.map((o) => `${o.method} ${o.path} ${o.op.operationId}`).sort()).toEqual(
      routes.map(([id, r]) => `${r.method} ${r.path} ${id}`).sort(),
    );
    expect(new Set(operations.map((o) => o.op.operationId)).size).toBe(OPERATION_IDS.length);
    for (const { op } of operations) {
      const r = ROUTES[op.operationId as keyof typeof ROUTES] as RouteDef;
      expect({ id: op.operationId, tags: op.tags, auth: op['x-skald-auth'], summary: op.summary }).toEqual({
        id: op.operationId,
        tags: [r.tag],
        auth: r.auth,
        summary: r.summary,
      });
      // public routes need no token; the others inherit the document's bearer scheme
      expect(op.security).toEqual(r.auth === 'public' ? [] : undefined);
      if (r.auth === 'admin') expect(Object.keys(op.responses)).toContain('403');
      expect(Object.keys(op.responses)).toContain(String(r.response.status));
    }
    expect(doc.tags.map((t) => t.name).sort()).toEqual([...new Set(routes.map(([, r]) => r.tag))].sort());
  });

  it('types every path and query parameter from the route schemas (a UUID is a uuid, a source its pattern)', () => {
    let typed = 0;
    for (const { path, op } of operations) {
      const r = ROUTES[op.operationId as keyof typeof ROUTES] as RouteDef;
      const inPath = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const params = op.parameters ?? [];
      expect(params.filter((p) => p.in === 'path').map((p) => p.name)).toEqual(inPath);
      expect(params.filter((p) => p.in === 'path').every((p) => p.required === true)).toBe(true);
      expect(params.filter((p) => p.in === 'query').map((p) => p.name)).toEqual(Object.keys(r.query?.shape ?? {}));
      for (const p of params) {
        const schema = deref(p.schema) as { type?: string; format?: string; pattern?: string; enum?: unknown[] };
        // never a bare `{type: string}`: a format, a pattern, an enum, a number or a length bound
        expect({ op: op.operationId, p: p.name, bare: JSON.stringify(schema) === '{"type":"string"}' }).toEqual({
          op: op.operationId,
          p: p.name,
          bare: false,
        });
        if (p.name === 'id' && r.tag !== 'agents') expect(schema.format).toBe('uuid');
        if (p.name === 'source' && p.in === 'path') expect(schema.pattern).toBe('^[a-z0-9-]{1,32}$');
        typed++;
      }
    }
    expect(typed).toBe(
      routes.reduce(
        (n, [, r]) => n + Object.keys(r.params?.shape ?? {}).length + Object.keys(r.query?.shape ?? {}).length,
        0,
      ),
    );
    expect(typed).toBeGreaterThan(40);
  });

  it('describes each body and answer with its route schema, and a file answer as binary', () => {
    for (const { op } of operations) {
      const r = ROUTES[op.operationId as keyof typeof ROUTES] as RouteDef;
      const ok = op.responses[String(r.response.status)];
      if (r.response.schema) expect(ok.content?.['application/json']?.schema).toBeDefined();
      if (r.response.binary) expect(ok.content?.['*/*']?.schema).toEqual({ type: 'string', format: 'binary' });
      if (!r.response.schema && !r.response.binary) expect(ok.content).toBeUndefined();
      if (r.body === 'multipart') expect(Object.keys(op.requestBody?.content ?? {})).toEqual(['multipart/form-data']);
      else if (r.body) {
        const body = deref(op.requestBody?.content['application/json'].schema);
        // the fields of the body are the fields of the zod schema
        const shape = (r.body as z.ZodType & { shape?: Record<string, unknown> }).shape;
        if (shape)
          expect(Object.keys((body as { properties: object }).properties).sort()).toEqual(Object.keys(shape).sort());
      } else expect(op.requestBody).toBeUndefined();
    }
  });

  it('keeps a schema that routes share as one component, never an inlined copy', () => {
    const components = doc.components.schemas;
    expect(Object.keys(components)).toEqual(
      expect.arrayContaining(['ErrorResponse', 'SessionSummary', 'Id', 'CronJobDto']),
    );
    const inPaths = JSON.stringify(doc.paths);
    // every object component: its rendering appears nowhere in the paths, only `$ref`s to it
    for (const [name, schema] of Object.entries(components)) {
      if (schema.type !== 'object') continue;
      expect({ name, inlined: inPaths.includes(JSON.stringify(schema)) }).toEqual({ name, inlined: false });
    }
    // and every component is used (reached from an operation through refs)
    const used = new Set<string>();
    const walk = (json: string) => {
      for (const m of json.matchAll(/#\/components\/schemas\/(\w+)/g))
        if (!used.has(m[1])) {
          used.add(m[1]);
          walk(JSON.stringify(components[m[1]]));
        }
    };
    walk(inPaths);
    expect(Object.keys(components).filter((n) => !used.has(n))).toEqual([]);
    expect((inPaths.match(/#\/components\/schemas\/ErrorResponse/g) ?? []).length).toBeGreaterThan(100);
  });
});
