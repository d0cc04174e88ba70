// rows.ts is generated from the migrated schema by scripts/gen-rows.js: this fails when a migration changed a table
// and the file was not regenerated, with the difference (expected: the committed file; received: the schema's).
import { readFileSync } from 'node:fs';
import { Client } from 'pg';
import { migrateUp } from '../data-source';

interface Generator {
  ROWS_TS: string;
  generateRows(url: string): Promise<string>;
  withScratchDatabase<T>(
    adminUrl: string,
    migrate: (url: string) => Promise<unknown>,
    work: (url: string) => Promise<T>,
  ): Promise<T>;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const generator = require('../../../../scripts/gen-rows.js') as Generator;

jest.setTimeout(120_000);

/** What the generator makes of a fresh database after `migrate`. */
function regenerate(migrate: (url: string) => Promise<unknown>): Promise<string> {
  return generator.withScratchDatabase(process.env.DATABASE_URL!, migrate, generator.generateRows);
}

describe('generated/rows.ts', () => {
  it('is what scripts/gen-rows.js generates from a freshly migrated database', async () => {
    const committed = readFileSync(generator.ROWS_TS, 'utf8');

    // When this fails: `npm run gen:rows`, and commit libs/persistence/src/generated/rows.ts.
    expect(await regenerate(migrateUp)).toBe(committed);
  });

  it('differs from the committed file once a migration adds a column', async () => {
    const committed = readFileSync(generator.ROWS_TS, 'utf8');
    const withColumn = await regenerate(async (url) => {
      await migrateUp(url);
      const db = new Client({ connectionString: url });
      await db.connect();
      try {
        await db.query(`ALTER TABLE users ADD COLUMN nickname text`);
      } finally {
        await db.end();
      }
    });

    expect(withColumn).not.toBe(committed);
    expect(withColumn).toMatch(/export interface UsersRow \{[^}]*\n {2}nickname: string \| null;\n\}/);
    expect(committed).not.toContain('nickname');
  });
});
