'use strict';
// Jest global setup for the integration and e2e projects: services reachable, code built, a fresh
// test database migrated. Runs once per Jest process.
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { unreachableServices } = require('../../scripts/lib-services');

const ROOT = path.resolve(__dirname, '../..');

module.exports = async function globalSetup() {
  if (process.env.SKALD_TEST_SETUP_DONE === '1') return;
  const down = await unreachableServices(process.env);
  if (down.length > 0) {
    throw new Error(down.map((s) => `${s.name} is not reachable at ${s.where}; start it with: ${s.start}`).join('\n'));
  }
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', 'tsconfig.build.json'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  const base = new URL(process.env.SKALD_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/skald_test');
  const { DataSource } = require(path.join(ROOT, 'node_modules/typeorm'));
  const admin = new DataSource({ type: 'postgres', url: new URL('/postgres', base).toString(), extra: { max: 1 } });
  await admin.initialize();
  const db = base.pathname.slice(1);
  await admin.query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
    [db],
  );
  await admin.query(`DROP DATABASE IF EXISTS "${db}"`);
  await admin.query(`CREATE DATABASE "${db}"`);
  await admin.destroy();
  const { migrateUp } = require(path.join(ROOT, 'libs/persistence/dist'));
  await migrateUp(base.toString());
  process.env.DATABASE_URL = base.toString();
  process.env.SKALD_TEST_SETUP_DONE = '1';
};
