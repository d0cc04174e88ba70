// scripts/check-unions.js against the real thing: a CHECK constraint written many ways (IN, = ANY, equalities
// joined by OR, `OR c IS NULL`, a varchar column, and shapes that are no list) is added to a table, PostgreSQL
// prints it back, and whenever the reader makes a union of it, that union is exactly the set of strings the
// server's own evaluation of the constraint admits (the literals, near misses of them, and random strings).
import fc from 'fast-check';
import { Client } from 'pg';

interface Generator {
  withScratchDatabase<T>(
    adminUrl: string,
    migrate: (url: string) => Promise<unknown>,
    work: (url: string) => Promise<T>,
  ): Promise<T>;
}
interface CheckUnionsModule {
  readListConstraint(expression: string, column: string): Promise<{ values: string[] } | { reason: string }>;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const generator = require('../../../../scripts/gen-rows.js') as Generator;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { readListConstraint } = require('../../../../scripts/check-unions.js') as CheckUnionsModule;

jest.setTimeout(180_000);

/** A literal in SQL as a person writes it. */
const q = (v: string): string => `'${v.replaceAll("'", "''")}'`;

/** Literals text may hold (no NUL), some of them near one another. */
const literal = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 8 }).filter((s) => !s.includes('\u0000')),
  fc.constantFrom('user', 'User', 'user ', ' user', 'admin', "it's", 'a\\b', '', 'é', 'e\u0301', '%', '_'),
);

/** Constraints on `col` as a migration might write them; the first ones are lists, the last ones are not. */
const written = (col: string, vs: string[]): string[] => [
  `${col} IN (${vs.map(q).join(', ')})`,
  `${col} = ANY (ARRAY[${vs.map(q).join(', ')}])`,
  vs.map((v) => `${col} = ${q(v)}`).join(' OR '),
  `${col} IN (${vs.map(q).join(', ')}) OR ${col} IS NULL`,
  `${q(vs[0])} = ${col} OR ${col} IN (${vs.map(q).join(', ')})`,
  `${col} NOT IN (${vs.map(q).join(', ')})`,
  `${col} IN (${vs.map(q).join(', ')}) AND length(${col}) > 1`,
  `lower(${col}) IN (${vs.map(q).join(', ')})`,
  `${col} = ANY (${q(`{${vs.map((v) => `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')}}`)}::text[])`,
  `${col} LIKE ${q(vs[0])}`,
  `${col} >= ${q(vs[0])}`,
];
const SHAPES = written('c', ['a']).length;

describe('check-unions against PostgreSQL', () => {
  it('a union read off a constraint is exactly what the server admits', async () => {
    await generator.withScratchDatabase(
      process.env.DATABASE_URL!,
      () => Promise.resolve(),
      async (url) => {
        const db = new Client({ connectionString: url });
        await db.connect();
        try {
          await db.query('CREATE TABLE t (c text, v varchar(40))');
          let read = 0;
          await fc.assert(
            fc.asyncProperty(
              fc.constantFrom('c', 'v'),
              fc.uniqueArray(literal, { minLength: 1, maxLength: 5 }),
              fc.array(literal, { maxLength: 6 }),
              fc.nat({ max: SHAPES - 1 }),
              async (col, values, others, shape) => {
                const constraint = written(col, values)[shape];
                await db.query(`ALTER TABLE t ADD CONSTRAINT k CHECK (${constraint})`);
                try {
                  const printed = await db.query<{ expression: string }>(
                    `SELECT pg_get_expr(conbin, conrelid) AS expression FROM pg_constraint WHERE conname = 'k'`,
                  );
                  const result = await readListConstraint(printed.rows[0].expression, col);
                  if (!('values' in result)) return;
                  read += 1;
                  const probes = [
                    ...values,
                    ...others,
                    ...values.map((v) => v.toUpperCase()),
                    ...values.map((v) => `${v} `),
                  ];
                  // The constraint itself, evaluated by the server on each probe as a value of the column.
                  const verdict = await db.query<{ p: string; ok: boolean | null }>(
                    `SELECT p, (${printed.rows[0].expression}) AS ok
                       FROM (SELECT p, p AS c, p::varchar(40) AS v FROM unnest($1::text[]) AS u(p)) AS t`,
                    [probes],
                  );
                  for (const { p, ok } of verdict.rows)
                    expect({ constraint, p, admitted: result.values.includes(p) }).toEqual({
                      constraint,
                      p,
                      admitted: ok === true,
                    });
                  expect(new Set(result.values)).toEqual(new Set(values));
                } finally {
                  await db.query('ALTER TABLE t DROP CONSTRAINT k');
                }
              },
            ),
            { seed: 36_002, numRuns: 300 },
          );
          // The list shapes come up often enough that the comparison above is not vacuous.
          expect(read).toBeGreaterThan(60);
        } finally {
          await db.end();
        }
      },
    );
  });
});
