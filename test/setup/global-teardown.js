'use strict';
// Drops the database this Jest process created (unless it was given one).
const path = require('node:path');

module.exports = async function globalTeardown() {
  const nats = globalThis.__skaldPrivateNats;
  if (nats && nats.exitCode === null) nats.kill('SIGTERM');
  if (process.env.SKALD_TEST_DATABASE_URL || !process.env.DATABASE_URL || process.env.SKALD_TEST_TEARDOWN_DONE === '1')
    return;
  process.env.SKALD_TEST_TEARDOWN_DONE = '1';
  const url = new URL(process.env.DATABASE_URL);
  const db = url.pathname.slice(1);
  if (!/^skald_test_\d+$/.test(db)) return;
  const { DataSource } = require(path.join(__dirname, '../../node_modules/typeorm'));
  const admin = new DataSource({ type: 'postgres', url: new URL('/postgres', url).toString(), extra: { max: 1 } });
  await admin.initialize();
  for (const name of [db, `${db}_migrate`]) await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.destroy();
};
