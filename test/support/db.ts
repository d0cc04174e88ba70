import { DataSource } from 'typeorm';

/** A small direct connection to the test database, for asserting rows. */
export async function testDb(): Promise<DataSource> {
  const ds = new DataSource({
    type: 'postgres',
    url: process.env.DATABASE_URL,
    extra: { max: 2 },
  });
  await ds.initialize();
  return ds;
}

export const ROOT = `${__dirname}/../..`;
