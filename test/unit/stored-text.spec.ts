// Derivation test of the stored-text wall: every string a request can carry — every body of the
// gateway's REST routes (its OpenAPI list), every WS client frame, every NATS request schema — is
// walked, and each string in it must refuse a NUL byte and a lone surrogate (Postgres `text` holds
// neither: 22021), unless it is one of the few kept verbatim below, with the reason and what stores it
// losslessly. A `z.string()` added to a contract without `StoredText` fails here, naming its path.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { z } from 'zod';
import { ClientFrame, ROUTES, RouteDef, StoredText, SUBJECTS } from '@skald/contracts';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;

interface Leaf {
  /** `<surface> <field path>`: `[]` an array item, `{key}` / `{}` a record's key / value. */
  where: string;
  /** The schema that parses this string, with its wrappers (optional, nullable, a transform after it). */
  schema: z.ZodType;
}

type Def = {
  type: string;
  innerType?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  options?: z.ZodType[];
  left?: z.ZodType;
  right?: z.ZodType;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  items?: z.ZodType[];
  in?: z.ZodType;
  getter?: () => z.ZodType;
};
const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);
const NO_STRINGS = new Set([
  'literal',
  'enum',
  'number',
  'int',
  'boolean',
  'unknown',
  'any',
  'null',
  'undefined',
  'void',
  'never',
  'date',
  'bigint',
  'custom',
  'transform',
  'nan',
  'file',
  'success',
]);

/** Every string a schema lets a value hold, as the schema that parses it (bounded: depth ≤ 32). */
function leaves(node: z.ZodType, outer: z.ZodType, where: string, out: Leaf[], depth = 0): Leaf[] {
  if (depth > 32) throw new Error(`${where}: nested deeper than the walk goes`);
  const d = defOf(node);
  const next = (n: z.ZodType, w: string) => leaves(n, n, w, out, depth + 1);
  if (d.type === 'string' || d.type === 'template_literal') out.push({ where, schema: outer });
  else if (WRAPPERS.has(d.type)) leaves(d.innerType!, outer, where, out, depth + 1);
  else if (d.type === 'pipe') leaves(d.in!, outer, where, out, depth + 1);
  else if (d.type === 'lazy') leaves(d.getter!(), outer, where, out, depth + 1);
  else if (d.type === 'object') for (const [k, v] of Object.entries(d.shape!)) next(v, `${where}.${k}`);
  else if (d.type === 'array') next(d.element!, `${where}[]`);
  else if (d.type === 'union') for (const o of d.options!) next(o, where);
  else if (d.type === 'intersection') [d.left!, d.right!].forEach((n) => next(n, where));
  else if (d.type === 'record') {
    next(d.keyType!, `${where}{key}`);
    next(d.valueType!, `${where}{}`);
  } else if (d.type === 'tuple') d.items!.forEach((it, i) => next(it, `${where}[${i}]`));
  else if (!NO_STRINGS.has(d.type)) throw new Error(`${where}: a ${d.type} schema the walk does not know`);
  return out;
}

/** The NATS subjects the gateway calls (read from its source): the requests that carry a client's strings. */
function gatewaySubjects(): Set<string> {
  const root = path.join(__dirname, '../../apps/gateway/src');
  const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter(
    (f) => f.endsWith('.ts') && !f.includes('spec'),
  );
  const called = files.flatMap((f) =>
    // `redis.call('incrby', …)` inside a Lua script is Redis's, not a NATS call
    [...readFileSync(path.join(root, f), 'utf8').matchAll(/(?<!\bredis)\.call\(\s*'([a-z_.]+)'/g)].map((m) => m[1]),
  );
  return new Set(called);
}
const CALLED = gatewaySubjects();

const SURFACES: Array<[string, z.ZodType]> = [
  ...Object.values(ROUTES as Record<string, RouteDef>).flatMap((r): Array<[string, z.ZodType]> =>
    r.body && r.body !== 'multipart' ? [[`rest ${r.method} ${r.path}`, r.body]] : [],
  ),
  ...ClientFrame.options.map((o): [string, z.ZodType] => [`ws ${o.shape.type.value}`, o]),
  // A subject only services call carries the model's and tools' strings (content, arguments, results,
  // previews): those are stored by the pg-text codec without loss (docs/security.md, "What poison is
  // handled how"; test/e2e/poison.e2e-spec.ts), so they are not walked here.
  ...Object.entries(SUBJECTS)
    .filter(([s]) => CALLED.has(s))
    .map(([s, spec]): [string, z.ZodType] => [`nats ${s}`, spec.request as z.ZodType]),
];
const LEAVES = SURFACES.flatMap(([name, schema]) => leaves(schema, schema, name, []));

const POISON = ['\0', '\uD800', '\uDBFF', '\uDC00', '\uDFFF'];

/** Whether a string schema accepts some text with a NUL byte or a lone surrogate in it (fast-check, seeded). */
function acceptsPoison(schema: z.ZodType): string | undefined {
  const found = fc.check(
    fc.property(fc.string({ maxLength: 24 }), fc.nat(), fc.constantFrom(...POISON), (s, at, unit) => {
      const i = at % (s.length + 1);
      return !schema.safeParse(s.slice(0, i) + unit + s.slice(i)).success;
    }),
    { seed, numRuns: 300 },
  );
  if (!found.failed) return undefined;
  const [s, at, unit] = found.counterexample!;
  const i = at % (s.length + 1);
  return JSON.stringify(s.slice(0, i) + unit + s.slice(i));
}

/**
 * Strings kept verbatim, each with why and what stores it without loss (docs/security.md, "What
 * poison is handled how"). Everything else must refuse NUL and lone surrogates.
 */
const CHAT = 'chat content: kept verbatim, stored by the pg-text codec without loss (poison.e2e, a user message)';
const PASSWORD = 'a password: never stored, only its argon2id hash';
const VERBATIM: Record<string, string> = {
  'rest post /api/{source}/messages.content': CHAT,
  'rest post /api/{source}/messages/{id}/edit.content': CHAT,
  'ws message.content': CHAT,
  'ws edit.content': CHAT,
  'nats session.submit.content': CHAT,
  'nats session.rewind.content': CHAT,
  'rest post /api/auth/login.password': PASSWORD,
  'rest put /api/auth/password.current_password': PASSWORD,
  'rest put /api/auth/password.new_password': PASSWORD,
  'rest post /api/admin/users.password': PASSWORD,
  'rest patch /api/admin/users/{id}.password': PASSWORD,
  'rest post /api/approval/rules/test.arguments{key}': 'a dry run of the gate: judged, never stored',
  'nats approval.rules.test.arguments{key}': 'a dry run of the gate: judged, never stored',
  'nats files.upload.name': 'sanitised by the tool runner into a file name, never stored as given',
  'nats files.upload.mimetype': 'sanitised by the tool runner into a file name, never stored as given',
  'nats files.read.path': 'resolved by the one path resolver (refuses NUL), never stored',
};

describe('every stored client string refuses what Postgres cannot store', () => {
  it('the walk reaches every surface (REST bodies, WS frames, NATS requests) and finds their strings', () => {
    expect(SURFACES.length).toBeGreaterThan(60);
    // every subject the gateway calls is one the contract knows
    expect([...CALLED].filter((s) => !(s in SUBJECTS))).toEqual([]);
    expect(CALLED.size).toBeGreaterThan(40);
    expect(LEAVES.length).toBeGreaterThan(100);
    // the walk finds a string it must: the API token name, a rule pattern, a frame's content
    const where = LEAVES.map((l) => l.where);
    expect(where).toEqual(expect.arrayContaining(['rest post /api/auth/tokens.name', 'ws message.content']));
  });

  it('each string of a request either refuses NUL and lone surrogates or is kept verbatim by a lossless store', () => {
    const offenders = LEAVES.filter((l) => !(l.where in VERBATIM))
      .map((l) => ({ where: l.where, accepts: acceptsPoison(l.schema) }))
      .filter((o) => o.accepts !== undefined)
      .map((o) => `${o.where} accepts ${o.accepts}`);
    expect(offenders).toEqual([]);
  });

  it('flags a plain string anywhere in a schema, and passes the same field as a StoredText (the check can fail)', () => {
    const loose = z.object({
      a: z.array(z.object({ b: z.string().max(9).optional() })),
      c: z.record(z.string(), z.number()),
    });
    const found = leaves(loose, loose, 'x', []).filter((l) => acceptsPoison(l.schema) !== undefined);
    expect(found.map((l) => l.where)).toEqual(['x.a[].b', 'x.c{key}']);
    const tight = z.object({ a: z.array(z.object({ b: StoredText(9).optional() })) });
    expect(leaves(tight, tight, 'x', []).filter((l) => acceptsPoison(l.schema) !== undefined)).toEqual([]);
  });

  it('every exception names a string that exists and still accepts poison (no stale entry)', () => {
    const byWhere = new Map(LEAVES.map((l) => [l.where, l]));
    const stale = Object.keys(VERBATIM).filter((w) => !byWhere.has(w) || !acceptsPoison(byWhere.get(w)!.schema));
    expect(stale).toEqual([]);
  });
});
