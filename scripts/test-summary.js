#!/usr/bin/env node
'use strict';
// Sums Jest JSON reports into the one line CI reads: `N passed, N failed`.
// A test file that failed to load counts as one failure; a missing report (Jest crashed) counts
// as one failure; a run of 0 tests is a failure.
const fs = require('node:fs');

/**
 * The part of Jest's JSON report (`--json`) read here.
 * @typedef {{
 *   numPassedTests: number,
 *   numFailedTests: number,
 *   testResults: Array<{ name: string, status: string, message?: string, assertionResults: Array<{ status: string }> }>,
 * }} JestReport
 */

/**
 * @param {string[]} files
 */
function summarize(files) {
  let passed = 0;
  let failed = 0;
  const problems = [];
  for (const file of files) {
    if (!fs.existsSync(file)) {
      failed += 1;
      problems.push(`${file}: no report (the test runner did not finish)`);
      continue;
    }
    /** @type {JestReport} */
    const report = JSON.parse(fs.readFileSync(file, 'utf8'));
    passed += report.numPassedTests;
    failed += report.numFailedTests;
    for (const suite of report.testResults) {
      const ran = suite.assertionResults.length;
      if (suite.status === 'failed' && (ran === 0 || suite.assertionResults.every((a) => a.status !== 'failed'))) {
        failed += 1;
        problems.push(
          `${suite.name}: failed to run: ${(suite.message || '').split('\n').find((l) => l.trim()) || 'unknown error'}`,
        );
      }
    }
  }
  const lintMarker = require('node:path').join(require('node:path').dirname(files[0] || '.'), 'lint.failed');
  if (files.length > 0 && fs.existsSync(lintMarker)) {
    failed += 1;
    problems.push('eslint reported errors');
  }
  if (passed + failed === 0) {
    failed = 1;
    problems.push('no test ran');
  }
  return { passed, failed, problems };
}

/**
 * The attack suite's figures: every hostile test writes `attack-suite-<name>.json` (an object of
 * counts) beside the Jest reports; they are printed as one line so a run shows how much was tried.
 * @param {string} dir
 */
function attackFigures(dir) {
  if (!fs.existsSync(dir)) return null;
  const files = fs
    .readdirSync(dir)
    .filter((f) => /^attack-suite-[a-z0-9-]+\.json$/.test(f))
    .sort();
  if (files.length === 0) return null;
  const parts = [];
  for (const f of files) {
    try {
      const figures = JSON.parse(fs.readFileSync(require('node:path').join(dir, f), 'utf8'));
      const name = f.slice('attack-suite-'.length, -'.json'.length);
      parts.push(
        `${name}: ${Object.entries(figures)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
      );
    } catch {
      parts.push(`${f}: unreadable`);
    }
  }
  return `attack suite: ${parts.join('; ')}`;
}

if (require.main === module) {
  const files = process.argv.slice(2);
  const { passed, failed, problems } = summarize(files);
  const attack = attackFigures(require('node:path').dirname(files[0] || 'test-results/x'));
  if (attack) console.log(attack);
  for (const p of problems) console.log(`  ! ${p}`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
}

module.exports = { summarize, attackFigures };
