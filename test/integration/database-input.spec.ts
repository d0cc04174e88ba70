// The second wall against real Postgres: the errors a value a request carried makes Postgres raise
// (through TypeORM, as every service writes) are the ones the NATS envelope and the gateway answer
// with 400 `invalid_input` — a NUL byte in text and in jsonb, a lone surrogate in jsonb, a string too
// long for its column, a number out of range, text that is not a number or a date.
import { randomUUID } from 'node:crypto';
import { DataSource, QueryRunner } from 'typeorm';
import { databaseInputError, sqlState } from '@skald/messaging/database-input';
import { toErrorBody } from '@skald/messaging';

jest.setTimeout(60_000);

describe('Postgres refusals of a client value map to invalid_input', () => {
  let ds: DataSource;
  let qr: QueryRunner;
  const table = `probe_${randomUUID().replace(/-/g, '')}`;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 1 } });
    await ds.initialize();
    qr = ds.createQueryRunner();
    await qr.connect();
    await qr.query(`CREATE TEMP TABLE ${table} (s varchar(4), t text, j jsonb, n int2, d date)`);
  });
  afterAll(async () => {
    await qr?.release();
    await ds?.destroy();
  });

  const refusal = async (column: string, value: unknown): Promise<unknown> => {
    try {
      await qr.query(`INSERT INTO ${table} (${column}) VALUES ($1)`, [value]);
    } catch (e) {
      return e;
    }
    throw new Error(`Postgres stored ${JSON.stringify(value)} in ${column}`);
  };

  it.each([
    ['a NUL byte in text', 't', 'a\0b', '22021'],
    ['a NUL escape in jsonb', 'j', JSON.stringify({ a: 'a\0b' }), '22P05'],
    ['a lone surrogate escape in jsonb', 'j', JSON.stringify({ a: '\uD800' }), '22P02'],
    ['a string too long for varchar(4)', 's', 'abcdef', '22001'],
    ['a number out of range for int2', 'n', 70_000, '22003'],
    ['text that is not a number', 'n', 'seven', '22P02'],
    ['text that is not a date', 'd', 'tomorrow-ish', '22007'],
    ['a date out of range', 'd', '2026-13-45', '22008'],
  ])('%s (column %s ← %p): SQLSTATE %s, answered invalid_input', async (_what, column, value, state) => {
    const e = await refusal(column, value);
    expect(sqlState(e)).toBe(state);
    expect(databaseInputError(e)).toMatchObject({ code: 'invalid_input' });
    expect(toErrorBody(e)).toMatchObject({ code: 'invalid_input' });
  });

  it('a unique violation is not the value’s fault: internal', async () => {
    await qr.query(`CREATE UNIQUE INDEX ON ${table} (t)`);
    await qr.query(`INSERT INTO ${table} (t) VALUES ('once')`);
    const e = await refusal('t', 'once');
    expect(sqlState(e)).toBe('23505');
    expect(toErrorBody(e).code).toBe('internal');
  });
});
