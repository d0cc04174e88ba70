'use strict';
// The tail every generator shares: `--check` fails when the committed file differs from what the source makes now;
// otherwise the file is rewritten when it differs.

const { existsSync, readFileSync, writeFileSync } = require('node:fs');
const { join, relative } = require('node:path');

const ROOT = join(__dirname, '..');

/**
 * Checks (`--check` in argv) or writes `file` so that it holds `next`. A stale file under `--check` ends the process
 * with 1 and names `command`, which regenerates it.
 * @param {string} file
 * @param {string} next
 * @param {string} command
 * @param {readonly string[]} [argv]
 */
function writeOrCheck(file, next, command, argv = process.argv) {
  const name = relative(ROOT, file);
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '';
  if (argv.includes('--check')) {
    if (next !== current) {
      console.error(`${name} is out of date: run ${command}`);
      process.exit(1);
    }
    console.log(`${name} is up to date`);
    return;
  }
  if (next !== current) writeFileSync(file, next);
  console.log(next === current ? `${name} is up to date` : `${name} regenerated`);
}

module.exports = { writeOrCheck };
