import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { createDataSource, poolSettings } from './data-source';

jest.setTimeout(30_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The pool's idle bounds on real Postgres: a burst opens up to `poolSize` backends; after the idle
 * time the pool keeps `poolMin` of them (the same backends: no new fork, no statement parsed
 * again) and never more than `poolSize`.
 */
describe('createDataSource: idle connections', () => {
  let admin: Client;
  beforeAll(async () => {
    admin = new Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
  });

  /** Backends of one application name, by pid. */
  async function backends(app: string): Promise<number[]> {
    const { rows } = await admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid`,
      [app],
    );
    return rows.map((r) => r.pid);
  }

  async function withPool(
    options: { poolSize: number; poolMin?: number; poolIdleMs?: number },
    body: (ds: DataSource, app: string) => Promise<void>,
  ): Promise<void> {
    const app = `pool-spec-${randomUUID().slice(0, 8)}`;
    const ds = createDataSource({ url: process.env.DATABASE_URL!, applicationName: app, ...options });
    await ds.initialize();
    try {
      await body(ds, app);
    } finally {
      await ds.destroy();
    }
  }

  /** `n` statements at once: the pool opens `n` connections (up to its size). */
  const burst = (ds: DataSource, n: number) =>
    Promise.all(Array.from({ length: n }, () => ds.query('SELECT pg_sleep(0.05), pg_backend_pid() AS pid')));

  it('keeps poolMin connections — the same backends — after the idle time, and closes the rest', async () => {
    await withPool({ poolSize: 3, poolMin: 1, poolIdleMs: 300 }, async (ds, app) => {
      await burst(ds, 3);
      expect(await backends(app)).toHaveLength(3);
      await sleep(1_000);
      const kept = await backends(app);
      expect(kept).toHaveLength(1);
      // Work after the quiet spell runs on the kept backend: nothing is opened.
      const [{ pid }] = await ds.query<Array<{ pid: number }>>('SELECT pg_backend_pid() AS pid');
      expect([pid]).toEqual(kept);
      expect(await backends(app)).toEqual(kept);
    });
  });

  it('closes every idle connection with poolMin 0, and none with poolIdleMs 0', async () => {
    await withPool({ poolSize: 2, poolMin: 0, poolIdleMs: 300 }, async (ds, app) => {
      await burst(ds, 2);
      await sleep(1_000);
      expect(await backends(app)).toHaveLength(0);
    });
    await withPool({ poolSize: 2, poolMin: 0, poolIdleMs: 0 }, async (ds, app) => {
      await burst(ds, 2);
      await sleep(1_000);
      expect(await backends(app)).toHaveLength(2);
    });
  });

  it('never holds more than poolSize, whatever poolMin says', async () => {
    expect(poolSettings({ poolSize: 2, poolMin: 5 }).min).toBe(2);
    await withPool({ poolSize: 2, poolMin: 5, poolIdleMs: 300 }, async (ds, app) => {
      await burst(ds, 6);
      expect((await backends(app)).length).toBeLessThanOrEqual(2);
    });
  });

  it('defaults to one connection kept and the rest closed after 60 s (BaseConfigSchema says the same)', () => {
    expect(poolSettings({})).toEqual({ max: 5, min: 1, idleTimeoutMillis: 60_000, connectionTimeoutMillis: 5_000 });
  });
});
