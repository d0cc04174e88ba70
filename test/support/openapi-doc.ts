/**
 * The served OpenAPI document with every `$ref` to a component replaced by the component, for tests
 * that walk request schemas (fields, strings) without knowing about components. A component that
 * refers back to itself is left as its `$ref` at the second visit (the walk stays bounded).
 */
export async function fetchInlinedOpenApi<T>(gatewayUrl: string): Promise<T> {
  const res = await fetch(`${gatewayUrl}/api/docs`);
  if (!res.ok) throw new Error(`GET /api/docs: ${res.status}`);
  const doc = (await res.json()) as { components?: { schemas?: Record<string, unknown> } };
  return inlineRefs(doc, doc.components?.schemas ?? {}, []) as T;
}

function inlineRefs(value: unknown, schemas: Record<string, unknown>, seen: string[]): unknown {
  if (Array.isArray(value)) return value.map((v) => inlineRefs(v, schemas, seen));
  if (!value || typeof value !== 'object') return value;
  const obj = value as Record<string, unknown>;
  const ref = typeof obj.$ref === 'string' ? /^#\/components\/schemas\/(.+)$/.exec(obj.$ref)?.[1] : undefined;
  if (ref && !seen.includes(ref) && ref in schemas) {
    const others = Object.fromEntries(Object.entries(obj).filter(([k]) => k !== '$ref'));
    return {
      ...(inlineRefs(schemas[ref], schemas, [...seen, ref]) as object),
      ...(inlineRefs(others, schemas, seen) as object),
    };
  }
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, inlineRefs(v, schemas, seen)]));
}
