// rows.ts is generated from the migrated schema by scripts/gen-rows.js: this fails when a migration changed a table
// and the file was not regenerated, with the difference (expected: the committed file; received: the schema's).
import { readFileSync } from 'node:fs';
import { stripVTControlCharacters } from 'node:util';
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

/** What the generator makes of the migrated schema once `sql` has run on it. */
function regenerateAfter(sql: string): Promise<string> {
  return regenerate(async (url) => {
    await migrateUp(url);
    const db = new Client({ connectionString: url });
    await db.connect();
    try {
      await db.query(sql);
    } finally {
      await db.end();
    }
  });
}

/** The failure of the first test's assertion, were `regenerated` what the schema gives (its diff, uncoloured). */
function driftFailure(regenerated: string, committed: string): string {
  try {
    expect(regenerated).toBe(committed);
  } catch (e) {
    return stripVTControlCharacters(e instanceof Error ? e.message : String(e));
  }
  throw new Error('no drift');
}

describe('generated/rows.ts', () => {
  it('is what scripts/gen-rows.js generates from a freshly migrated database', async () => {
    const committed = readFileSync(generator.ROWS_TS, 'utf8');

    // When this fails: `npm run gen:rows`, and commit libs/persistence/src/generated/rows.ts.
    expect(await regenerate(migrateUp)).toBe(committed);
  });

  it('differs from the committed file once a migration adds a column', async () => {
    const committed = readFileSync(generator.ROWS_TS, 'utf8');
    const withColumn = await regenerateAfter(`ALTER TABLE users ADD COLUMN nickname text`);

    expect(withColumn).not.toBe(committed);
    expect(withColumn).toMatch(/export interface UsersRow \{[^}]*\n {2}nickname: string \| null;\n\}/);
    expect(committed).not.toContain('nickname');
  });

  it('fails, naming the column, once a migration changes the list a CHECK constraint allows', async () => {
    const committed = readFileSync(generator.ROWS_TS, 'utf8');
    expect(committed).toMatch(
      /export interface ChatHistoryRow \{[^}]*\n {2}status: 'ok' \| 'failed' \| 'superseded';\n/,
    );

    const widened = await regenerateAfter(
      `ALTER TABLE chat_history DROP CONSTRAINT chat_history_status_check,
         ADD CONSTRAINT chat_history_status_check CHECK (status IN ('ok', 'failed', 'superseded', 'archived'))`,
    );

    expect(widened).toMatch(
      /export interface ChatHistoryRow \{[^}]*\n {2}status: 'ok' \| 'failed' \| 'superseded' \| 'archived';\n/,
    );
    const diff = driftFailure(widened, committed);
    expect(diff).toContain("-   status: 'ok' | 'failed' | 'superseded';");
    expect(diff).toContain("+   status: 'ok' | 'failed' | 'superseded' | 'archived';");
  });

  it('fails, naming the column, once a CHECK constraint stops being a list: the column is a string again', async () => {
    const committed = readFileSync(generator.ROWS_TS, 'utf8');
    expect(committed).toMatch(/export interface UsersRow \{[^}]*\n {2}role: 'user' \| 'admin';\n/);

    const loosened = await regenerateAfter(
      `ALTER TABLE users DROP CONSTRAINT users_role_check, ADD CONSTRAINT users_role_check CHECK (role ~ '^[a-z]+$')`,
    );

    const comment = "/** CHECK users_role_check is not a list of literals: (role ~ '^[a-z]+$'::text) */";
    expect(loosened).toContain(`export interface UsersRow {`);
    expect(loosened).toMatch(/export interface UsersRow \{[^}]*\n {2}role: string;\n/);
    const diff = driftFailure(loosened, committed);
    expect(diff).toContain("-   role: 'user' | 'admin';");
    expect(diff).toContain(`+   ${comment}\n+   role: string;`);
  });
});
