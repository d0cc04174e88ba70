#!/usr/bin/env node
// Commit messages: a subject of at most 72 characters without a trailing period, and a blank line between
// the subject and a body.
//
//   node scripts/check-commit-msg.js .git/COMMIT_EDITMSG   # one message file (the commit-msg hook)
//   node scripts/check-commit-msg.js --history             # every commit after CUTOVER (npm run lint)
//
// Characters are what a reader counts: grapheme clusters, so an accented letter written with a combining mark
// or an emoji sequence is one. Older history (before CUTOVER) is left as it is.
'use strict';

const { execFileSync } = require('node:child_process');
const { readFileSync } = require('node:fs');

/** The last commit whose message is not checked: every commit after it must pass. */
const CUTOVER = '235de1f2cc215a3389d0a9236ecbf5516a42da34';
const MAX_SUBJECT = 72;
/** Git's scissors line: with `--cleanup=scissors` (`commit -v`) everything below it is dropped. */
const SCISSORS = /^# -+ >8 -+$/m;

const graphemes = new Intl.Segmenter('en', { granularity: 'grapheme' });

/**
 * Number of user-perceived characters of `text`.
 * @param {string} text
 */
function characterCount(text) {
  return [...graphemes.segment(text)].length;
}

/**
 * The message as git stores it: comment lines and what follows the scissors line dropped, trailing
 * whitespace and leading and trailing blank lines removed.
 * @param {string} raw
 * @returns {string[]}
 */
function cleanLines(raw) {
  const scissors = raw.search(SCISSORS);
  const text = scissors >= 0 ? raw.slice(0, scissors) : raw;
  const lines = text
    .replace(/\r\n/g, '\n')
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .map((line) => line.replace(/\s+$/u, ''));
  while (lines.length > 0 && lines[0] === '') lines.shift();
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/**
 * What is wrong with a commit message (empty when nothing is).
 * @param {string} raw the message, as the commit-msg hook reads it or as `git log --format=%B` prints it
 * @returns {string[]}
 */
function checkMessage(raw) {
  const lines = cleanLines(raw);
  if (lines.length === 0) return ['the message is empty'];
  const [subject, second] = lines;
  const problems = [];
  const length = characterCount(subject);
  if (length > MAX_SUBJECT) {
    problems.push(`the subject has ${length} characters, at most ${MAX_SUBJECT} are allowed`);
  }
  if (subject.endsWith('.')) problems.push('the subject ends with a period');
  if (second !== undefined && second !== '') problems.push('the subject and the body need a blank line between them');
  return problems;
}

/**
 * Every commit after CUTOVER up to HEAD, with its message.
 * @param {string} cwd
 * @returns {{ hash: string, message: string }[]}
 */
function commitsAfterCutover(cwd) {
  const git = (/** @type {string[]} */ ...args) => execFileSync('git', args, { cwd, encoding: 'utf8' });
  try {
    git('cat-file', '-e', `${CUTOVER}^{commit}`);
  } catch {
    throw new Error(`commit ${CUTOVER} (the commit-message cut-over) is not in this clone: fetch the full history`);
  }
  const log = git('log', '--format=%H%x00%B%x00', `${CUTOVER}..HEAD`);
  const fields = log.split('\0');
  const commits = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    commits.push({ hash: fields[i].trim(), message: fields[i + 1] });
  }
  return commits;
}

/** @param {string[]} argv */
function main(argv) {
  if (argv[0] === '--history') {
    const cwd = process.cwd();
    let bad = 0;
    const commits = commitsAfterCutover(cwd);
    for (const { hash, message } of commits) {
      const problems = checkMessage(message);
      if (problems.length === 0) continue;
      bad += 1;
      console.error(`${hash.slice(0, 12)} ${cleanLines(message)[0] ?? ''}\n  ${problems.join('\n  ')}`);
    }
    if (bad > 0) {
      console.error(`${bad} of ${commits.length} commits after ${CUTOVER.slice(0, 12)} have a malformed message`);
      return 1;
    }
    console.log(`commit messages: ${commits.length} commits after ${CUTOVER.slice(0, 12)} checked`);
    return 0;
  }
  if (argv.length !== 1) {
    console.error('usage: check-commit-msg.js <message-file> | --history');
    return 2;
  }
  const problems = checkMessage(readFileSync(argv[0], 'utf8'));
  if (problems.length === 0) return 0;
  console.error(
    `commit message: ${problems.join('; ')}.\n` +
      `A subject of at most ${MAX_SUBJECT} characters without a final period, a blank line, then the body ` +
      `(git keeps your message in ${argv[0]}: \`git commit -e -F ${argv[0]}\`).`,
  );
  return 1;
}

module.exports = { CUTOVER, MAX_SUBJECT, checkMessage, characterCount };

if (require.main === module) process.exitCode = main(process.argv.slice(2));
