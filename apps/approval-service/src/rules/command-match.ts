import { scanSegments, SimpleCommand } from './shell-analysis';
import { anyCharsGlob, GlobTest } from './rule-glob';
import { baseName, catalogueVerdict, gateRunnerKnowledge, parseInvocation, runnerSpec } from './programs';

/**
 * Matching rules against what a command line runs. Allow rules match the command as written
 * (exact argv prefix) and never a command that runs other commands; deny and require rules match
 * what would run: the program by its base name (`/bin/rm` is `rm`), through the wrappers that run
 * their arguments (`env`, `sudo`, `timeout`, `xargs`, `sh -c`, `find -exec`, …), with short-flag
 * clusters split and known long flags folded onto their short form (`-rf` ≡ `-fr` ≡ `-r -f` ≡
 * `--recursive --force`) and flag order ignored.
 */

const MAX_UNWRAP = 8;
const MAX_SHELL_STARTS = 256;

export { baseName, gateRunnerKnowledge };

export interface NormalisedCommand {
  program: string;
  flags: Set<string>;
  positional: string[];
  /** Indices of positional words that may be the value of an option of unknown arity. */
  ambiguous: ReadonlySet<number>;
}

/**
 * A command's program, its options as a set (clusters split, aliases and long forms folded, values
 * of valued options skipped — programs.ts) and its other words.
 */
export function normaliseArgv(argv: readonly string[]): NormalisedCommand {
  const inv = parseInvocation(argv);
  const flags = new Set<string>();
  for (const o of inv.options) flags.add(o.name);
  return { program: inv.program, flags, positional: inv.positional, ambiguous: inv.ambiguous };
}

// ---------------------------------------------------------------- wrappers

/** Builtins that change how later commands are found or read. */
const SHELL_STATE = new Set([
  'alias',
  'unalias',
  'enable',
  'hash',
  'set',
  'shopt',
  'export',
  'unset',
  'declare',
  'typeset',
  'local',
  'readonly',
  'trap',
  'source',
  '.',
  'eval',
  'fc',
  'ulimit',
  'umask',
]);

const NAME_ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

interface Unwrapped {
  /**
   * The commands the wrapper may run: after its leading words and, where an option can stand for
   * them (`runcon -t T cmd`), also without consuming them; empty for none (`env` alone,
   * `command -v x`, `script -c` only).
   */
  inner: string[][];
  /** Shell code given to an option (`script -c CODE`, `flock -c CODE`). */
  code: string[];
}

/** What a wrapper runs: its inner commands (options and their values skipped, by programs.ts) and its code options. */
function unwrapOnce(argv: readonly string[]): Unwrapped | null {
  const w = runnerSpec(argv[0]);
  if (!w) return null;
  const lead = w.runner.leading ?? 0;
  const first = unwrapWith(argv, w, lead);
  if (!w.runner.leadingOptional || lead === 0) return first;
  const second = unwrapWith(argv, w, 0);
  const inner = [...first.inner];
  for (const x of second.inner) if (!inner.some((o) => o.length === x.length)) inner.push(x);
  return { inner, code: first.code };
}

function unwrapWith(argv: readonly string[], w: NonNullable<ReturnType<typeof runnerSpec>>, lead: number): Unwrapped {
  const { runner } = w;
  const code: string[] = [];
  let i = 1;
  let leading = lead;
  while (i < argv.length) {
    const a = argv[i];
    if (a === '--') {
      i++;
      break;
    }
    if (a.startsWith('-') && a.length > 1) {
      if (w.singleDashWords && !a.startsWith('--')) {
        // luit -encoding UTF-8 cmd: one option per word
        i += w.valuedLong.has(a.slice(1)) ? 2 : 1;
        continue;
      }
      if (a.startsWith('--')) {
        const eq = a.indexOf('=');
        const name = eq === -1 ? a.slice(2) : a.slice(2, eq);
        const value = eq === -1 ? (w.valuedLong.has(name) ? (argv[i + 1] ?? '') : null) : a.slice(eq + 1);
        if (name === 'split-string' && baseName(argv[0]) === 'env') {
          const rest = eq === -1 ? argv.slice(i + 2) : argv.slice(i + 1);
          return { inner: [[...(value ?? '').split(/\s+/).filter(Boolean), ...rest]], code };
        }
        if (w.codeLong.has(name) && value !== null) code.push(value);
        i += eq === -1 && w.valuedLong.has(name) ? 2 : 1;
        continue;
      }
      let next = i + 1;
      for (let j = 1; j < a.length; j++) {
        const ch = a[j];
        if (!w.valuedShort.has(ch)) continue;
        const attached = j + 1 < a.length;
        const value = attached ? a.slice(j + 1) : (argv[i + 1] ?? '');
        if (ch === 'S' && baseName(argv[0]) === 'env') {
          const rest = attached ? argv.slice(i + 1) : argv.slice(i + 2);
          return { inner: [[...value.split(/\s+/).filter(Boolean), ...rest]], code };
        }
        if (w.codeShort.has(ch)) code.push(value);
        if (!attached) next = i + 2;
        break;
      }
      i = next;
      continue;
    }
    if (runner.assignments && NAME_ASSIGNMENT.test(a)) {
      i++;
      continue;
    }
    if (leading > 0) {
      leading--;
      i++;
      continue;
    }
    break;
  }
  const inner = !runner.noPositionalCommand && i < argv.length ? [argv.slice(i)] : [];
  return { inner, code };
}

/** Code read like an unreadable line: every word may start a command (also after a `NAME=`-style prefix). */
function codeStarts(code: string, depth: number, queue: Array<{ argv: readonly string[]; depth: number }>): void {
  let starts = 0;
  for (const seg of scanSegments(code))
    for (let i = 0; i < seg.length && starts < MAX_SHELL_STARTS; i++, starts++) {
      queue.push({ argv: seg.slice(i), depth });
      const eq = seg[i].lastIndexOf('=');
      if (eq !== -1 && eq + 1 < seg[i].length) queue.push({ argv: [seg[i].slice(eq + 1), ...seg.slice(i + 1)], depth });
    }
}

/**
 * Every argv a command would run: itself, what its wrappers run, `find -exec` commands, and
 * (as token sequences) the code given to `sh -c`, `eval`, `script -c`, `tar --to-command` and the
 * like.
 */
export function effectiveCommands(argv: readonly string[]): string[][] {
  const out: string[][] = [];
  const queue: Array<{ argv: readonly string[]; depth: number }> = [{ argv, depth: 0 }];
  while (queue.length > 0) {
    const { argv: cur, depth } = queue.shift() as { argv: readonly string[]; depth: number };
    if (cur.length === 0) continue;
    out.push([...cur]);
    if (depth >= MAX_UNWRAP) continue;
    const w = unwrapOnce(cur);
    if (w) {
      for (const inner of w.inner) queue.push({ argv: inner, depth: depth + 1 });
      for (const code of w.code) codeStarts(code, MAX_UNWRAP, queue);
      if (runnerSpec(cur[0])?.runner.shell) codeStarts(cur.slice(1).join(' '), MAX_UNWRAP, queue);
    }
    const inv = parseInvocation(cur);
    if (inv.program === 'find') {
      for (let i = 1; i < cur.length; i++) {
        if (!FIND_EXEC.has(cur[i])) continue;
        const end = cur.findIndex((x, j) => j > i && (x === ';' || x === '+'));
        queue.push({ argv: cur.slice(i + 1, end === -1 ? cur.length : end), depth: depth + 1 });
      }
    }
    for (const o of inv.options)
      if (o.value !== null && COMMAND_VALUED.has(`${inv.program} ${o.name}`)) codeStarts(o.value, MAX_UNWRAP, queue);
  }
  return out;
}
const FIND_EXEC = new Set(['-exec', '-execdir', '-ok', '-okdir']);
/** Options whose value is a command line the program runs (also judged as runs-code by the catalogue). */
const COMMAND_VALUED = new Set([
  'tar --to-command',
  'tar --checkpoint-action',
  'tar -I',
  'tar --use-compress-program',
  'tar -F',
  'tar --info-script',
  'tar --new-volume-script',
  'tar --rsh-command',
  'rg --pre',
  'rg --hostname-bin',
  'sort --compress-program',
  'git --upload-pack',
  'git --receive-pack',
  'git --exec',
  'git -x',
  'git --extcmd',
]);

/** Why no allow rule can match this command (it runs, or changes how the shell runs, others, or runs code), or null. */
export function unallowableReason(cmd: SimpleCommand): string | null {
  const name = baseName(cmd.argv[0]);
  if (runnerSpec(name)) return `${name} runs other commands`;
  if (SHELL_STATE.has(name)) return `${name} changes how the shell runs later commands`;
  if (name === 'find' && cmd.argv.some((a) => FIND_EXEC.has(a))) return 'find -exec runs other commands';
  const code = runsCodeReason(cmd.argv);
  if (code) return code;
  if (cmd.assignments.length > 0) return 'variable assignments before a command';
  const write = cmd.redirections.find((r) => isWriteRedirection(r.op) && !HARMLESS_TARGETS.has(r.target));
  if (write) return `redirection writes ${write.target}`;
  return null;
}

/**
 * Why this invocation runs code the gate cannot read (an interpreter's `-c`/`-e`/script, a
 * catalogue row of risk `runs`), or null. Such a command is never covered by a bypass, and under
 * a deny rule on any program it needs a human.
 */
export function runsCodeReason(argv: readonly string[]): string | null {
  const v = catalogueVerdict(parseInvocation(argv));
  if (!v || v.row.risk !== 'runs') return null;
  return `${v.program} ${v.row.when === 'every invocation' ? '' : `with ${v.row.when} `}${v.row.effect}`.replace(
    /`/g,
    '',
  );
}

const HARMLESS_TARGETS = new Set(['/dev/null', '/dev/stdout', '/dev/stderr']);
function isWriteRedirection(op: string): boolean {
  return op === '>' || op === '>>' || op === '>|';
}

// ---------------------------------------------------------------- patterns

/** A rule's command pattern as words: split on blanks, `'…'` and `"…"` group (no expansion). */
export function patternWords(pattern: string): string[] | string {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  let quote: string | null = null;
  for (const c of pattern) {
    if (quote) {
      if (c === quote) quote = null;
      else cur += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
      continue;
    }
    if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
      continue;
    }
    if (/[;&|<>()`$\\\n]/.test(c)) return `the character ${JSON.stringify(c)} is not allowed in a command pattern`;
    cur += c;
    inWord = true;
  }
  if (quote) return 'unterminated quote';
  if (inWord) words.push(cur);
  if (words.length === 0) return 'a command pattern names exactly one command';
  return words;
}

/** A literal word, a word glob (`*` = any characters, matched in linear time), or any one word. */
type WordMatcher = string | GlobTest | null;

function wordMatchers(words: readonly string[]): WordMatcher[] {
  return words.map((w) => (w === '*' ? null : w.includes('*') ? anyCharsGlob(w) : w));
}

/** `*` alone matches any one word, or as the last word any rest (also none). */
function prefixMatch(matchers: readonly WordMatcher[], argv: readonly string[]): boolean {
  for (let i = 0; i < matchers.length; i++) {
    const w = matchers[i];
    if (w === null) {
      if (i === matchers.length - 1) return true;
      if (argv[i] === undefined) return false;
      continue;
    }
    const a = argv[i];
    if (a === undefined) return false;
    if (typeof w === 'string' ? a !== w : !w.test(a)) return false;
  }
  return true;
}

/**
 * `prefixMatch` where a word that may be an option's value (an option of unknown arity before it)
 * may also be skipped: a deny rule `deploytool push` matches `deploytool --env prod push`.
 * Dynamic programming over (pattern word, argv word): O(pattern × argv).
 */
function prefixMatchSkipping(
  matchers: readonly WordMatcher[],
  argv: readonly string[],
  skippable: ReadonlySet<number>,
): boolean {
  if (skippable.size === 0) return prefixMatch(matchers, argv);
  // reach[j]: the first i pattern words can be matched ending before argv word j
  let reach = new Set<number>([0]);
  for (let i = 0; i < matchers.length; i++) {
    const w = matchers[i];
    if (w === null && i === matchers.length - 1) return reach.size > 0;
    const next = new Set<number>();
    for (let j of reach) {
      // bounded by argv: j only grows, and the word past the end stops it
      for (;;) {
        const a = argv[j];
        if (a === undefined) break;
        if (w === null || (typeof w === 'string' ? a === w : w.test(a))) next.add(j + 1);
        if (!skippable.has(j)) break;
        j++;
      }
    }
    if (next.size === 0) return false;
    reach = next;
  }
  return true;
}

export interface CommandPattern {
  /** As written: for allow rules. */
  exact(argv: readonly string[]): boolean;
  /** By what runs (base name, flags as a set, positional words by prefix): for deny and require rules. */
  normalised(argv: readonly string[]): boolean;
  /** `normalised` on a command already read by `normaliseArgv`. */
  matchesNormalised(n: NormalisedCommand): boolean;
  program: string;
}

export function compileCommandWords(words: readonly string[]): CommandPattern {
  const exact = wordMatchers(words);
  const norm = normaliseArgv(words);
  const programMatcher = wordMatchers([norm.program])[0];
  const positional = wordMatchers(norm.positional);
  // a trailing `*` in the pattern also stands for any flags after the named ones
  return {
    program: norm.program,
    exact: (argv) => prefixMatch(exact, argv),
    normalised: (argv) => matchesNormalised(normaliseArgv(argv)),
    matchesNormalised,
  };
  function matchesNormalised(n: NormalisedCommand): boolean {
    if (
      programMatcher !== null &&
      !(typeof programMatcher === 'string' ? n.program === programMatcher : programMatcher.test(n.program))
    )
      return false;
    for (const f of norm.flags) if (!n.flags.has(f)) return false;
    return prefixMatchSkipping(positional, n.positional, n.ambiguous);
  }
}

/** Deny/require matching over a command and everything it runs. */
export function matchesWhatRuns(pattern: CommandPattern, argv: readonly string[]): boolean {
  return whatRuns(argv).some((n) => pattern.matchesNormalised(n));
}

/** Every command a command would run (`effectiveCommands`), each read by `normaliseArgv`: computed once per command, matched by every rule. */
export function whatRuns(argv: readonly string[]): NormalisedCommand[] {
  return effectiveCommands(argv).map(normaliseArgv);
}

/**
 * Deny/require matching over a line that cannot be read: every token that could be the pattern's
 * program starts a candidate command running over the next SCAN_WINDOW tokens, across segments
 * (an alias or a variable can carry a command name into a later command).
 */
export function scanMatches(
  pattern: CommandPattern,
  segments: readonly string[][],
  maxStarts = 64,
): boolean | 'too_many' {
  const tokens = segments.flat();
  const wantsProgram = pattern.program;
  const programRe = wantsProgram.includes('*') ? anyCharsGlob(wantsProgram) : null;
  let starts = 0;
  for (let i = 0; i < tokens.length; i++) {
    const candidate = baseName(tokens[i].replace(/^.*[=:+#%?!@~^,]/, '').replace(/^-+/, ''));
    if (programRe ? !programRe.test(candidate) : candidate !== wantsProgram) continue;
    if (++starts > maxStarts) return 'too_many';
    if (matchesWhatRuns(pattern, [candidate, ...tokens.slice(i + 1, i + 1 + SCAN_WINDOW)])) return true;
  }
  return false;
}

const SCAN_WINDOW = 256;
