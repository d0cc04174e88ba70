#!/usr/bin/env node
'use strict';
// Builds the web client with Vite unless nothing it is built from changed since the last build: a hash of its
// inputs (apps/web except dist, the contracts and the client SDK it imports, the installed Vite and the lockfile) is kept in
// apps/web/dist/.inputs-hash. `--force` builds anyway.
const { spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const WEB = path.join(ROOT, 'apps', 'web');
const DIST = path.join(WEB, 'dist');
const STAMP = path.join(DIST, '.inputs-hash');
/** What the bundle is built from: directories are walked (bounded by the repository's size), files read. */
const INPUTS = [
  WEB,
  path.join(ROOT, 'libs', 'contracts', 'src'),
  path.join(ROOT, 'libs', 'client', 'src'),
  path.join(ROOT, 'node_modules', 'vite', 'package.json'),
  path.join(ROOT, 'package-lock.json'),
];
const SKIP = new Set(['dist', 'node_modules']);

/**
 * @param {string} p
 * @param {string[]} out
 * @returns {string[]}
 */
function files(p, out = []) {
  const st = fs.statSync(p, { throwIfNoEntry: false });
  if (!st) return out;
  if (!st.isDirectory()) {
    out.push(p);
    return out;
  }
  for (const e of fs.readdirSync(p).sort()) if (!SKIP.has(e)) files(path.join(p, e), out);
  return out;
}

/** The hash of every input file's path and content. */
function inputsHash() {
  const h = crypto.createHash('sha256');
  for (const f of INPUTS.flatMap((p) => files(p))) {
    h.update(path.relative(ROOT, f));
    h.update('\0');
    h.update(fs.readFileSync(f));
    h.update('\0');
  }
  return h.digest('hex');
}

function main() {
  const hash = inputsHash();
  const built =
    fs.existsSync(path.join(DIST, 'index.html')) && fs.existsSync(STAMP) && fs.readFileSync(STAMP, 'utf8') === hash;
  if (built && !process.argv.includes('--force')) {
    console.log(
      'web client unchanged since its last build: Vite build skipped (npm run build:web -- --force rebuilds)',
    );
    return;
  }
  // A production bundle whoever calls (Jest's global setup runs with NODE_ENV=test, which would make Vite's
  // import.meta.env.PROD false and compile out the service worker's registration).
  const r = spawnSync('npm', ['run', 'build', '-w', '@skald/web'], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, NODE_ENV: 'production' },
  });
  if (r.status !== 0) process.exit(r.status || 1);
  fs.writeFileSync(STAMP, hash);
}

if (require.main === module) main();

module.exports = { inputsHash, STAMP };
