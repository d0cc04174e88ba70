'use strict';
// The benchmarks' database: a fresh, migrated database of the given name next to DATABASE_URL.
const path = require('node:path');

const ROOT = path.resolve(__dirname, '../..');
const { DataSource } = require(path.join(ROOT, 'node_modules/typeorm'));
const { migrateUp } = require(path.join(ROOT, 'libs/persistence/dist'));

/** Drops (closing its connections), creates and migrates `name`; returns its URL. */
async function freshDatabase(name) {
  const base = new URL(process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/skald');
  const admin = new DataSource({ type: 'postgres', url: new URL('/postgres', base).toString(), extra: { max: 1 } });
  await admin.initialize();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.destroy();
  const url = new URL(`/${name}`, base).toString();
  await migrateUp(url);
  return url;
}

module.exports = { freshDatabase };
