'use strict';
// Jest global setup for the integration and e2e projects: services reachable, code built, a fresh
// test database migrated. Runs once per Jest process. Each Jest process gets its own database
// (`skald_test_<pid>`, dropped by the teardown), so two runs on one machine never share rows.
const { execFileSync, spawn } = require('node:child_process');
const path = require('node:path');
const { tcpReachable, unreachableServices } = require('../../scripts/lib-services');
const { natsBinary } = require('../../scripts/lib-local-auth');
const { freePort } = require('../../scripts/lib-stack');
const { dropInstanceRoles } = require('./global-teardown');

const ROOT = path.resolve(__dirname, '../..');

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The NATS the tests use: NATS_URL (default nats://127.0.0.1:4222) when it answers, else a private anonymous
 * nats-server on a spare port for this Jest process (plain NATS: nothing uses JetStream), as `npm start` does.
 */
async function ensureNats() {
  const url = new URL(process.env.NATS_URL || 'nats://127.0.0.1:4222');
  if (await tcpReachable(url.hostname, Number(url.port) || 4222)) return;
  const bin = natsBinary(process.env);
  if (!bin)
    throw new Error(
      `NATS does not answer at ${url.host} and nats-server is not installed: apt-get install nats-server`,
    );
  const port = await freePort();
  const child = spawn(bin, ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  globalThis.__skaldPrivateNats = child;
  process.on('exit', () => child.exitCode === null && child.kill('SIGKILL'));
  for (let i = 0; i < 100 && !(await tcpReachable('127.0.0.1', port, 200)); i++)
    await new Promise((r) => setTimeout(r, 100));
  process.env.NATS_URL = `nats://127.0.0.1:${port}`;
  console.log(`NATS does not answer at ${url.host}: the tests use a private nats-server at ${process.env.NATS_URL}`);
}

module.exports = async function globalSetup() {
  if (process.env.SKALD_TEST_SETUP_DONE === '1') return;
  const down = await unreachableServices(process.env);
  if (down.length > 0) {
    throw new Error(down.map((s) => `${s.name} is not reachable at ${s.where}; start it with: ${s.start}`).join('\n'));
  }
  await ensureNats();
  // SKALD_TEST_SKIP_BUILD=1 when the caller has just built (scripts/test.sh does).
  if (process.env.SKALD_TEST_SKIP_BUILD !== '1') {
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  }
  const base = new URL(
    process.env.SKALD_TEST_DATABASE_URL || `postgres://postgres@127.0.0.1:5432/skald_test_${process.pid}`,
  );
  const { DataSource } = require(path.join(ROOT, 'node_modules/typeorm'));
  const admin = new DataSource({ type: 'postgres', url: new URL('/postgres', base).toString(), extra: { max: 1 } });
  await admin.initialize();
  // Databases of earlier runs whose Jest process is gone.
  const leftovers = await admin.query(
    `SELECT datname FROM pg_database WHERE datname ~ '^skald_test_[0-9]+(_migrate)?$'`,
  );
  for (const { datname } of leftovers) {
    if (!alive(Number(datname.split('_')[2]))) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  }
  // And the service roles of their installs (named after them: libs/persistence service-roles.ts).
  const roleOwners =
    await admin.query(`SELECT DISTINCT substring(rolname from '^(skald_test_[0-9]+(?:_migrate)?)_') AS db
       FROM pg_roles WHERE rolname ~ '^skald_test_[0-9]+_'`);
  const dead = roleOwners.map((r) => r.db).filter((db) => db && !alive(Number(db.split('_')[2])));
  await dropInstanceRoles(admin, dead);
  const db = base.pathname.slice(1);
  await admin.query(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
  await admin.query(`CREATE DATABASE "${db}"`);
  await admin.destroy();
  const { migrateUp } = require(path.join(ROOT, 'libs/persistence/dist'));
  await migrateUp(base.toString());
  process.env.DATABASE_URL = base.toString();
  process.env.SKALD_TEST_SETUP_DONE = '1';
};
