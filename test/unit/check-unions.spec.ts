// scripts/check-unions.js: which CHECK constraints make a text column's type a union of literals in rows.ts. A list
// read wrong would type a column with values it never holds (or without ones it does), so every shape PostgreSQL
// prints for a list is read exactly, whatever the literals, and everything else is reported, never guessed at.
// The same reading against the server's own verdict: libs/persistence/src/generated/check-unions.integration-spec.ts.
import fc from 'fast-check';
import ts from 'typescript';

interface UnreadCheck {
  table: string;
  column: string;
  constraint: string;
  expression: string;
  reason: string;
}
interface CheckOnColumn {
  table: string;
  column: string;
  type: string;
  constraint: string;
  expression: string;
  validated: boolean;
}
interface CheckUnionsModule {
  readListConstraint(expression: string, column: string): Promise<{ values: string[] } | { reason: string }>;
  readCheckUnions(checks: CheckOnColumn[]): Promise<{ unions: Map<string, string[]>; unread: UnreadCheck[] }>;
  literalUnion(values: string[]): string;
  unreadComment(u: UnreadCheck): string;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const checkUnions = require('../../scripts/check-unions.js') as CheckUnionsModule;
const { literalUnion, readCheckUnions, readListConstraint, unreadComment } = checkUnions;

const RUNS = { seed: 36_001, numRuns: 1000 };

/** A string literal as PostgreSQL prints one (standard_conforming_strings: only the quote is doubled). */
const sql = (v: string, type = 'text'): string => `'${v.replaceAll("'", "''")}'::${type}`;

/** Literals as text may hold them: anything but NUL, quotes and backslashes included. */
const literal = fc.string({ unit: 'binary', maxLength: 12 }).filter((s) => !s.includes('\u0000'));
const literals = fc.uniqueArray(literal, { minLength: 1, maxLength: 8 });

/** The shapes PostgreSQL prints for a list of literals on a text (or varchar) column `c`. */
const SHAPES: Record<string, (values: string[], c?: string) => string> = {
  in: (vs, c = 'c') =>
    vs.length === 1 ? `(${c} = ${sql(vs[0])})` : `(${c} = ANY (ARRAY[${vs.map((v) => sql(v)).join(', ')}]))`,
  inOrNull: (vs, c = 'c') => `((${c} = ANY (ARRAY[${vs.map((v) => sql(v)).join(', ')}])) OR (${c} IS NULL))`,
  equalities: (vs, c = 'c') => `(${vs.map((v) => `(${c} = ${sql(v)})`).join(' OR ')})`,
  constantFirst: (vs, c = 'c') => `(${vs.map((v) => `(${sql(v)} = ${c})`).join(' OR ')})`,
  varchar: (vs, c = 'c') =>
    `((${c})::text = ANY ((ARRAY[${vs.map((v) => sql(v, 'character varying')).join(', ')}])::text[]))`,
  asWritten: (vs, c = 'c') => `${c} IN (${vs.map((v) => `'${v.replaceAll("'", "''")}'`).join(', ')})`,
};

describe('readListConstraint', () => {
  it('reads each constraint of the schema as the database prints it', async () => {
    const cases: [string, string, string[]][] = [
      ["(role = ANY (ARRAY['user'::text, 'admin'::text]))", 'role', ['user', 'admin']],
      [
        "((rewind_kind = ANY (ARRAY['regenerate'::text, 'edit'::text])) OR (rewind_kind IS NULL))",
        'rewind_kind',
        ['regenerate', 'edit'],
      ],
      ["(status = 'running'::text)", 'status', ['running']],
      ["((kind)::text = ANY ((ARRAY['a'::character varying, 'b'::character varying])::text[]))", 'kind', ['a', 'b']],
    ];
    for (const [expression, column, values] of cases)
      expect(await readListConstraint(expression, column)).toEqual({ values });
  });

  it('reads every list shape exactly, whatever the literals hold', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(SHAPES)), literals, async (shape, values) => {
        expect(await readListConstraint(SHAPES[shape](values), 'c')).toEqual({ values });
      }),
      RUNS,
    );
  });

  it('reads no other shape: a regex, a length, AND, NOT, another column, an array literal stay unread', async () => {
    const unread = [
      "(c ~ '^[a-z]+$'::text)",
      '((length(c) >= 1) AND (length(c) <= 512))',
      "((c = ANY (ARRAY['a'::text])) AND (length(c) > 0))",
      "(NOT (c = ANY (ARRAY['a'::text, 'b'::text])))",
      "(c <> ALL (ARRAY['a'::text, 'b'::text]))",
      "(c <> 'a'::text)",
      "(d = ANY (ARRAY['a'::text, 'b'::text]))",
      "((c = 'a'::text) OR (d = 'b'::text))",
      "((c = 'a'::text) OR (d IS NULL))",
      "(lower(c) = ANY (ARRAY['a'::text, 'b'::text]))",
      "(c = ANY ('{a,b}'::text[]))",
      '((c)::integer = ANY (ARRAY[1, 2]))',
      "(c = ANY (ARRAY['a'::text, c]))",
      '(c = \'a\'::text COLLATE "C")',
      "(c = ANY (ARRAY['a'::text, NULL::text]))",
      "((c = 'a'::text) = (d IS NULL))",
      '(c IS NULL)',
      '(c IS NOT NULL)',
      "(c LIKE 'a%'::text)",
      "(c = ANY (ARRAY['a'::text])); DROP TABLE users; SELECT (true",
      "(c = ANY (ARRAY['a'::text]",
    ];
    for (const expression of unread) {
      const read = await readListConstraint(expression, 'c');
      expect({ expression, read: 'values' in read ? read.values : 'unread' }).toEqual({ expression, read: 'unread' });
    }
  });

  it('reads nothing once a list is wrapped in anything but OR and IS NULL', async () => {
    const wrap = fc.constantFrom(
      (e: string) => `(NOT ${e})`,
      (e: string) => `(${e} AND (c <> ''::text))`,
      (e: string) => `(${e} OR (c ~ 'x'::text))`,
      (e: string) => `(${e} = true)`,
      (e: string) => `(${e} IS TRUE)`,
      (e: string) => `COALESCE(${e}, false)`,
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(SHAPES)), literals, wrap, async (shape, values, w) => {
        expect(await readListConstraint(w(SHAPES[shape](values)), 'c')).toHaveProperty('reason');
        // The same list on another column says nothing of this one.
        expect(await readListConstraint(SHAPES[shape](values, 'd'), 'c')).toHaveProperty('reason');
      }),
      { ...RUNS, numRuns: 300 },
    );
  });
});

describe('readCheckUnions', () => {
  const check = (over: Partial<CheckOnColumn>): CheckOnColumn => ({
    table: 't',
    column: 'c',
    type: 'text',
    constraint: 't_c_check',
    expression: "(c = ANY (ARRAY['a'::text, 'b'::text, 'c'::text]))",
    validated: true,
    ...over,
  });

  it('gives a column with several lists the literals all of them admit; reports the rest by column', async () => {
    const { unions, unread } = await readCheckUnions([
      check({}),
      check({ constraint: 't_c_check1', expression: "(c = ANY (ARRAY['c'::text, 'a'::text]))" }),
      check({ constraint: 't_c_len', expression: '(length(c) > 0)' }),
      check({ column: 'd', constraint: 't_d_check', expression: "(d ~ 'x'::text)" }),
      check({ column: 'e', constraint: 't_e_check', type: 'bpchar', expression: "(e = 'a'::bpchar)" }),
      check({ column: 'f', constraint: 't_f_check', validated: false, expression: "(f = 'a'::text)" }),
    ]);

    expect(Object.fromEntries(unions)).toEqual({ 't.c': ['a', 'c'] });
    expect(unread.map((u) => [u.column, u.constraint, u.reason])).toEqual([
      ['d', 't_d_check', 'is not a list of literals'],
      ['e', 't_e_check', 'is on a bpchar column, whose values are not the literals as written'],
      ['f', 't_f_check', 'is NOT VALID: rows from before it are unchecked'],
    ]);
  });
});

describe('literalUnion and unreadComment, as TypeScript reads them', () => {
  it('a union of any literals is exactly those literals to the compiler', () => {
    fc.assert(
      fc.property(literals, (values) => {
        const source = ts.createSourceFile('u.ts', `type U = ${literalUnion(values)};`, ts.ScriptTarget.ES2022);
        const alias = source.statements[0];
        if (!ts.isTypeAliasDeclaration(alias)) throw new Error('not a type alias');
        const members = ts.isUnionTypeNode(alias.type) ? alias.type.types : [alias.type];
        const read = members.map((m) =>
          ts.isLiteralTypeNode(m) && ts.isStringLiteral(m.literal) ? m.literal.text : undefined,
        );
        expect(read).toEqual(values);
        expect(source.statements).toHaveLength(1);
      }),
      RUNS,
    );
    expect(literalUnion([])).toBe('never');
  });

  it('a comment on a column stays one comment on that column, whatever the expression holds', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (expression) => {
        const comment = unreadComment({ table: 't', column: 'c', constraint: 'k', expression, reason: 'r' });
        const source = ts.createSourceFile('c.ts', `interface I {\n  /** ${comment} */\n  c: string;\n}`, 99);
        const [decl] = source.statements;
        expect(source.statements).toHaveLength(1);
        if (!ts.isInterfaceDeclaration(decl)) throw new Error('not an interface');
        expect(decl.members.map((m) => m.name?.getText(source))).toEqual(['c']);
        expect(comment).not.toMatch(/\*\/|[\r\n]/);
      }),
      RUNS,
    );
  });
});
