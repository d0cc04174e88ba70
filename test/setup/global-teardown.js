'use strict';
// Drops the database this Jest process created (unless it was given one).
const path = require('node:path');

/**
 * Drops the cluster-wide service roles of the installs named after `databases` (dropped already: the roles had
 * grants there only), so that test runs leave no roles behind.
 */
async function dropInstanceRoles(admin, databases) {
  const { SKALD_SERVICES, instanceOf, serviceRoleName } = require(path.join(__dirname, '../../libs/persistence/dist'));
  for (const db of databases)
    for (const s of SKALD_SERVICES)
      await admin.query(`DROP ROLE IF EXISTS "${serviceRoleName(s, instanceOf(`postgres://h/${db}`))}"`);
}

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
  await dropInstanceRoles(admin, [db, `${db}_migrate`]);
  await admin.destroy();
};
module.exports.dropInstanceRoles = dropInstanceRoles;
