#!/usr/bin/env node
'use strict';
// `npm run bench`: every benchmark, one after the other, each printing its figures.
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const BENCHES = ['approval-check.js', 'tools.js', 'recovery.js', 'dependency-recovery.js'];
let failed = 0;
for (const b of BENCHES) {
  console.log(`\n=== ${b}`);
  const r = spawnSync(process.execPath, [path.join(__dirname, 'bench', b)], { stdio: 'inherit', env: process.env });
  if (r.status !== 0) failed++;
}
process.exit(failed > 0 ? 1 : 0);
