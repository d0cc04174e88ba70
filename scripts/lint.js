#!/usr/bin/env node
// `npm run lint`: every static check, each reported with its time; exits 1 when one fails.
//
//   ESLint (type-aware, no warning allowed), Prettier --check, the type-check of scripts/ (checked JSDoc), knip's
//   dead files, exports and dependencies, file-level import cycles (.ts and .tsx), and the commit messages after the
//   cut-over.
//
// ESLint takes most of the time, so it runs beside the others (two lanes: the machines here have two cores).
'use strict';

const { spawn } = require('node:child_process');
const { join } = require('node:path');

const ROOT = join(__dirname, '..');
const bin = (/** @type {string} */ pkg, /** @type {string} */ file) => join(ROOT, 'node_modules', pkg, file);
// Nx's project graph, which @nx/enforce-module-boundaries reads (a fresh clone has none), without its daemon.
const NX_ENV = { NX_DAEMON: 'false', NX_NO_CLOUD: 'true' };

/** @typedef {{ name: string, args: string[], env?: Record<string, string> }} Step */

/** @type {Step[][]} */
const LANES = [
  [
    { name: 'nx project graph', args: [bin('nx', 'bin/nx.js'), 'show', 'projects'], env: NX_ENV },
    // Typed linting holds a TypeScript program per tsconfig (fifteen projects, the web client and the CLI with
    // React's types): past V8's default 4 GiB heap on a fresh clone, so ESLint gets 8 GiB (machines here have 24).
    {
      name: 'eslint',
      args: ['--max-old-space-size=8192', bin('eslint', 'bin/eslint.js'), '.', '--max-warnings', '0'],
      env: NX_ENV,
    },
  ],
  [
    { name: 'prettier --check', args: [bin('prettier', 'bin/prettier.cjs'), '--check', '--log-level', 'warn', '.'] },
    { name: 'tsc scripts/', args: [bin('typescript', 'bin/tsc'), '-p', 'scripts/tsconfig.json'] },
    { name: 'tsc scripts/bench/', args: [bin('typescript', 'bin/tsc'), '-p', 'scripts/bench/tsconfig.json'] },
    { name: 'knip (dead code)', args: [bin('knip', 'bin/knip.js'), '--no-progress'] },
    { name: 'import cycles', args: [join(ROOT, 'scripts/check-import-cycles.js')] },
    { name: 'commit messages', args: [join(ROOT, 'scripts/check-commit-msg.js'), '--history'] },
  ],
];

/**
 * Runs one step, its output kept for the report.
 * @param {Step} step
 * @returns {Promise<{ name: string, ok: boolean, ms: number, output: string }>}
 */
function run(step) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, step.args, { cwd: ROOT, env: { ...process.env, ...step.env } });
    /** @type {Buffer[]} */
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    const done = (/** @type {boolean} */ ok) =>
      resolve({ name: step.name, ok, ms: Date.now() - started, output: Buffer.concat(chunks).toString('utf8') });
    child.on('error', (e) => {
      chunks.push(Buffer.from(String(e)));
      done(false);
    });
    child.on('close', (code) => done(code === 0));
  });
}

/** @param {Step[]} lane */
async function runLane(lane) {
  const results = [];
  for (const step of lane) {
    const result = await run(step);
    results.push(result);
    if (!result.ok && step.name === 'nx project graph') break;
  }
  return results;
}

async function main() {
  const started = Date.now();
  const results = (await Promise.all(LANES.map(runLane))).flat();
  for (const r of results) {
    const text = r.output.trim();
    if (!r.ok || (text && r.name !== 'nx project graph')) console.log(`── ${r.name}\n${text}`);
  }
  console.log('');
  for (const r of results) console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name.padEnd(22)} ${(r.ms / 1000).toFixed(1)} s`);
  console.log(`lint: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return results.every((r) => r.ok) ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    console.error(e);
    process.exitCode = 1;
  },
);
