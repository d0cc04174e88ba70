import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from './migrations';

export interface DatabaseOptions {
  /** `postgres://user:pass@host:port/db` */
  url: string;
  /** Pool size: Postgres allows 100 connections here, shared by every process of every test. */
  poolSize?: number;
  /**
   * Connections kept open while idle (clamped to the pool size; default 1): never closed for
   * idleness, so work after a quiet spell does not pay a new backend (a fork, catalog caches, every
   * named statement parsed and planned again: ~10 ms of Postgres CPU for the worker's statements).
   */
  poolMin?: number;
  /**
   * Idle ms after which a connection above `poolMin` is closed (default 60 s; 0: never). pg-pool
   * reuses the newest idle connection first, so only those a burst opened wait here. Neither
   * setting raises the bound on connections: a process never holds more than `poolSize`.
   */
  poolIdleMs?: number;
  applicationName?: string;
}

/**
 * A DataSource with the migrations registered and `synchronize` off, and no entities: repositories run SQL and
 * type its rows with the generated row types (`generated/rows.ts`).
 */
export function createDataSource(options: DatabaseOptions): DataSource {
  return new DataSource({
    type: 'postgres',
    url: options.url,
    migrations: MIGRATIONS,
    migrationsTableName: 'skald_migrations',
    synchronize: false,
    logging: false,
    applicationName: options.applicationName,
    extra: poolSettings(options),
  });
}

/** node-postgres' pool settings of {@link createDataSource}. */
export function poolSettings(options: Pick<DatabaseOptions, 'poolSize' | 'poolMin' | 'poolIdleMs'>): {
  max: number;
  min: number;
  idleTimeoutMillis: number;
  connectionTimeoutMillis: number;
} {
  const max = options.poolSize ?? 5;
  return {
    max,
    min: Math.min(options.poolMin ?? 1, max),
    idleTimeoutMillis: options.poolIdleMs ?? 60_000,
    connectionTimeoutMillis: 5_000,
  };
}

/** Applies every pending migration; returns the names applied. */
export async function migrateUp(url: string): Promise<string[]> {
  const ds = createDataSource({ url, poolSize: 1, applicationName: 'skald-migrate' });
  await ds.initialize();
  try {
    const done = await ds.runMigrations({ transaction: 'each' });
    return done.map((m) => m.name);
  } finally {
    await ds.destroy();
  }
}

/** Reverts the last `steps` migrations. */
export async function migrateDown(url: string, steps = 1): Promise<void> {
  const ds = createDataSource({ url, poolSize: 1, applicationName: 'skald-migrate' });
  await ds.initialize();
  try {
    for (let i = 0; i < steps; i++) await ds.undoLastMigration({ transaction: 'each' });
  } finally {
    await ds.destroy();
  }
}

/** Creates the database named in the URL if it does not exist (connects to `postgres` to do it). */
export async function ensureDatabase(url: string): Promise<boolean> {
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!/^[a-zA-Z0-9_]+$/.test(name)) throw new Error(`database name "${name}" must be [a-zA-Z0-9_]+`);
  u.pathname = '/postgres';
  const admin = new DataSource({ type: 'postgres', url: u.toString(), extra: { max: 1 } });
  await admin.initialize();
  try {
    const rows: unknown[] = await admin.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [name]);
    if (rows.length > 0) return false;
    await admin.query(`CREATE DATABASE "${name}"`);
    return true;
  } finally {
    await admin.destroy();
  }
}
