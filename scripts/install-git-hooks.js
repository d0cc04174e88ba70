#!/usr/bin/env node
// npm's `prepare` step (run by `npm install` and `npm ci`): installs the commit-msg hook that runs
// scripts/check-commit-msg.js, in a git checkout only (not in an unpacked tarball or a Docker build context).
// A commit-msg hook that this script did not write is left alone, with a note.
'use strict';

const { execFileSync } = require('node:child_process');
const { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } = require('node:fs');
const { join, resolve } = require('node:path');

const ROOT = join(__dirname, '..');
const MARKER = '# installed by scripts/install-git-hooks.js';
const HOOK = `#!/bin/sh
${MARKER}: commit subjects of at most 72 characters, no final period,
# a blank line before the body (npm install writes it again).
exec node scripts/check-commit-msg.js "$1"
`;

function main() {
  // `.git` is a directory in a clone and a file in a worktree.
  if (!existsSync(join(ROOT, '.git'))) return;
  let hooksDir;
  try {
    hooksDir = execFileSync('git', ['rev-parse', '--git-path', 'hooks'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return; // no git on this machine: nothing to hook into
  }
  const hook = join(resolve(ROOT, hooksDir), 'commit-msg');
  if (existsSync(hook)) {
    const current = readFileSync(hook, 'utf8');
    if (current === HOOK) return;
    if (!current.includes(MARKER)) {
      console.log(`${hook} exists and is not ours: left as it is (run scripts/check-commit-msg.js from it)`);
      return;
    }
  }
  mkdirSync(resolve(ROOT, hooksDir), { recursive: true });
  writeFileSync(hook, HOOK);
  chmodSync(hook, 0o755);
}

main();
