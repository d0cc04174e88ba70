#!/usr/bin/env node
'use strict';
// `npm run bench`: every benchmark, one after the other, each printing its figures. Arguments go
// to the turn benchmark (`npm run bench -- --quick`, `--profile`; see scripts/bench/turn.js);
// `--only <name>` runs one benchmark (approval-check, tools, recovery, dependency-recovery, turn, syscalls).
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const args = process.argv.slice(2);
const i = args.indexOf('--only');
const only = i >= 0 ? args.splice(i, 2)[1] : null;
const BENCHES = /** @type {[string, string[]][]} */ ([
  ['approval-check.js', []],
  ['tools.js', []],
  ['recovery.js', []],
  ['dependency-recovery.js', []],
  ['turn.js', args],
  ['syscalls.js', []],
]).filter(([b]) => !only || b === `${only}.js`);
if (BENCHES.length === 0) {
  console.error(`no benchmark named ${only}`);
  process.exit(2);
}
let failed = 0;
for (const [b, a] of BENCHES) {
  console.log(`\n=== ${b}`);
  const r = spawnSync(process.execPath, [path.join(__dirname, 'bench', b), ...a], {
    stdio: 'inherit',
    env: process.env,
  });
  if (r.status !== 0) failed++;
}
process.exit(failed > 0 ? 1 : 0);
