// Comments and docs say what the code is and why, not how it came to be: no issue numbers, no
// session names. A citation sends the reader to a thread they may not have, and it goes stale while
// the rule it stood for stays; state the rule or the reason instead. Which issue asked for a change
// and which session measured it belong in the commit that made it (git log, git blame).
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative } from 'node:path';

const repoRoot = join(__dirname, '..', '..');

/** The folders a reader of the code meets, walked whole. */
const FOLDERS = ['apps', 'libs', 'scripts', 'test', 'deploy', 'docs', 'k8s', 'agents', '.ci'];
/** Built, installed or generated output inside them: not the repository's text. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'coverage', 'test-results', '.nx']);
/** The text files checked, by extension; extension-less ones by name. */
const TEXT_EXTENSIONS = new Set(
  ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json', '.md', '.yaml', '.yml', '.css', '.html', '.sh', '.c', '.conf'].concat(
    ['.example', '.webmanifest', '.gitignore', '.dockerignore', '.prettierignore', '.prettierrc'],
  ),
);
const TEXT_NAMES = new Set(['Dockerfile', 'run']);
/** Generated from package.json by npm: its text is not ours. */
const SKIPPED_FILES = new Set(['package-lock.json']);
/** This file spells the patterns it looks for. */
const SELF = relative(repoRoot, __filename);

/** What a citation of history looks like: each kind with its pattern. */
export const HISTORY_CITATIONS: ReadonlyArray<readonly [kind: string, pattern: RegExp]> = [
  // "issue 34", "Issue #5", "issues 12 and 13", "issue-7"; not `create_issue` (a word before it)
  ['an issue number', /\bissues?[\s#-]*\d+/i],
  // "session 16", "Session 11", "sessions 12 and 13" (a working session, not a chat session: a
  // chat session is never named by a bare number)
  ['a session number', /\bsessions?\s+\d+\b/i],
];

/** The citations in `text`, one line each: `file:line: kind: the line`. */
export function historyCitations(file: string, text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, i) => {
    for (const [kind, pattern] of HISTORY_CITATIONS)
      if (pattern.test(line)) found.push(`${file}:${i + 1}: ${kind}: ${line.trim()}`);
  });
  return found;
}

function isText(name: string): boolean {
  return !SKIPPED_FILES.has(name) && (TEXT_NAMES.has(name) || TEXT_EXTENSIONS.has(extname(name) || name));
}

/** Every text file under `dir`, skipping built and installed output. */
function textFiles(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return SKIPPED_DIRS.has(e.name) ? [] : textFiles(path);
    return e.isFile() && isText(e.name) ? [path] : [];
  });
}

/** The repository's text: the folders above and the files at its root. */
function repositoryText(): string[] {
  const rootFiles = readdirSync(repoRoot, { withFileTypes: true })
    .filter((e) => e.isFile() && isText(e.name))
    .map((e) => join(repoRoot, e.name));
  return [...rootFiles, ...FOLDERS.flatMap((f) => textFiles(join(repoRoot, f)))]
    .map((f) => relative(repoRoot, f))
    .filter((f) => f !== SELF)
    .sort();
}

describe('the repository text', () => {
  const files = repositoryText();

  it('is found: code, tests, scripts, docs and deployment files, no built or installed output', () => {
    for (const expected of [
      'README.md',
      'docs/performance.md',
      'apps/session-worker/src/turns/turn-driver.ts',
      'apps/web/src/main.tsx',
      'libs/persistence/src/migrations/1764460800100-approvals.ts',
      'scripts/bench/turn.js',
      'test/e2e/turn.e2e-spec.ts',
      'docker-compose.yml',
    ])
      expect(files).toContain(expected);
    expect(files.filter((f) => /(^|\/)(node_modules|dist)\//.test(f))).toEqual([]);
    expect(files).not.toContain('package-lock.json');
  });

  it('cites no issue number and no session: comments and docs state the rule as it is', () => {
    const found = files.flatMap((f) => historyCitations(f, readFileSync(join(repoRoot, f), 'utf8')));
    expect(found).toEqual([]);
  });
});

describe('the citation detector', () => {
  it.each([
    ['// Issue 34, point 4: path rules judge where the write lands', 'an issue number'],
    [' * Durable (issue 6 point 7): the start of a call', 'an issue number'],
    ['see issue #12', 'an issue number'],
    ['(issues 12 and 13)', 'an issue number'],
    ['fixed in issue-7', 'an issue number'],
    ['docs/performance.md, Session 11', 'a session number'],
    ['since session 9 the messages are carried', 'a session number'],
    ['figures of sessions 12 and 13', 'a session number'],
  ])('finds %j', (line, kind) => {
    expect(historyCitations('x.ts', `const a = 1;\n${line}\n`)).toEqual([`x.ts:2: ${kind}: ${line.trim()}`]);
  });

  it.each([
    "tools: [{ name: 'mcp__gh__create_issue' }]",
    "it('another user's session answers 404')",
    'a session of its own; 3 sessions at once',
    'the sessions table, session_id, sessions.turn_seq',
    'an issued token expires after 15 minutes',
    'the tool runner raises an issue when the quota is over',
  ])('ignores %j', (line) => {
    expect(historyCitations('x.ts', line)).toEqual([]);
  });
});
