import { scanSegments, SimpleCommand } from './shell-analysis';
import { anyCharsGlob, GlobTest } from './rule-glob';

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

export function baseName(word: string): string {
  const i = word.lastIndexOf('/');
  return i === -1 ? word : word.slice(i + 1);
}

/** Long flags folded onto a short one, per program. */
const LONG_FLAGS: Record<string, Record<string, string>> = {
  rm: { recursive: 'r', force: 'f', dir: 'd', verbose: 'v', interactive: 'i' },
  cp: { recursive: 'r', force: 'f', archive: 'a', verbose: 'v', link: 'l', 'symbolic-link': 's' },
  mv: { force: 'f', verbose: 'v', 'no-clobber': 'n', update: 'u' },
  chmod: { recursive: 'R', verbose: 'v', changes: 'c', silent: 'f', quiet: 'f' },
  chown: { recursive: 'R', verbose: 'v', changes: 'c', silent: 'f', quiet: 'f' },
  chgrp: { recursive: 'R', verbose: 'v', changes: 'c', silent: 'f', quiet: 'f' },
  ln: { symbolic: 's', force: 'f', verbose: 'v' },
  mkdir: { parents: 'p', verbose: 'v' },
  rmdir: { parents: 'p', verbose: 'v' },
  shred: { remove: 'u', zero: 'z', force: 'f', verbose: 'v' },
  git: { force: 'f' },
};
/** Short flags that mean the same: `rm -R` is `rm -r`. */
const SHORT_ALIASES: Record<string, Record<string, string>> = {
  rm: { R: 'r' },
  cp: { R: 'r' },
};

export interface NormalisedCommand {
  program: string;
  flags: Set<string>;
  positional: string[];
}

/** A command's program, its flags as a set (clusters split, aliases folded) and its other words. */
export function normaliseArgv(argv: readonly string[]): NormalisedCommand {
  const program = baseName(argv[0] ?? '');
  const longs = LONG_FLAGS[program] ?? {};
  const aliases = SHORT_ALIASES[program] ?? {};
  const flags = new Set<string>();
  const positional: string[] = [];
  let dashdash = false;
  for (const a of argv.slice(1)) {
    if (dashdash || a === '-' || !a.startsWith('-')) positional.push(a);
    else if (a === '--') dashdash = true;
    else if (a.startsWith('--')) {
      const name = a.slice(2).split('=')[0];
      flags.add(longs[name] ?? `--${name}`);
    } else for (const ch of a.slice(1)) flags.add(aliases[ch] ?? ch);
  }
  return { program, flags, positional };
}

// ---------------------------------------------------------------- wrappers

/** Options of a wrapper that take a value (`-u USER`), so the value is not the wrapped command. */
interface WrapperSpec {
  valued: string[];
  /** Positional words the wrapper itself consumes before the command (`timeout DUR`). */
  leading?: number;
  /** `NAME=value` words before the command are the wrapper's (`env X=1 cmd`, `sudo X=1 cmd`). */
  assignments?: boolean;
}

const WRAPPERS: Record<string, WrapperSpec> = {
  command: { valued: [] },
  builtin: { valued: [] },
  exec: { valued: ['-a'] },
  env: { valued: ['-u', '--unset', '-C', '--chdir', '-S', '--split-string'], assignments: true },
  nice: { valued: ['-n', '--adjustment'] },
  nohup: { valued: [] },
  timeout: { valued: ['-s', '--signal', '-k', '--kill-after'], leading: 1 },
  stdbuf: { valued: ['-i', '-o', '-e', '--input', '--output', '--error'] },
  time: { valued: ['-f', '--format', '-o', '--output'] },
  xargs: {
    valued: ['-I', '-L', '-n', '-P', '-s', '-d', '-E', '-a', '--max-args', '--max-procs', '--delimiter', '--arg-file'],
  },
  sudo: {
    valued: ['-u', '-g', '-C', '-D', '-h', '-p', '-r', '-t', '-U', '-T', '--user', '--group'],
    assignments: true,
  },
  doas: { valued: ['-u', '-C'] },
  ionice: { valued: ['-c', '-n', '-p', '--class', '--classdata'] },
  setsid: { valued: [] },
  chrt: { valued: [], leading: 1 },
  taskset: { valued: [], leading: 1 },
  chroot: { valued: ['--userspec', '--groups'], leading: 1 },
  flock: { valued: ['-w', '--timeout', '-E', '--conflict-exit-code'], leading: 1 },
  unbuffer: { valued: [] },
  watch: { valued: ['-n', '--interval', '-d'] },
  strace: { valued: ['-e', '-o', '-p', '-s', '-u'] },
  ltrace: { valued: ['-e', '-o', '-p', '-s', '-u'] },
  parallel: { valued: ['-j', '--jobs'] },
  caffeinate: { valued: [] },
  su: { valued: ['-c', '--command', '-s', '--shell', '-g', '-G'] },
  runuser: { valued: ['-u', '-g', '-G', '-c', '--command'] },
  firejail: { valued: [] },
  busybox: { valued: [] },
};
/** Shells and `eval`: their argument is shell code, scanned like an unreadable line. */
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'fish', 'csh', 'tcsh', 'busybox']);
const FIND_EXEC = new Set(['-exec', '-execdir', '-ok', '-okdir']);
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

/** The command a wrapper runs, or null when the wrapper runs nothing (`env` alone, `command -v x`). */
function unwrapOnce(argv: readonly string[]): string[] | null {
  const spec = WRAPPERS[baseName(argv[0])];
  if (!spec) return null;
  let i = 1;
  let leading = spec.leading ?? 0;
  while (i < argv.length) {
    const a = argv[i];
    if (a === '--') {
      i++;
      break;
    }
    if (a.startsWith('-') && a.length > 1) {
      const name = a.includes('=') ? a.slice(0, a.indexOf('=')) : a;
      if ((name === '-S' || name === '--split-string') && baseName(argv[0]) === 'env') {
        const str = a.includes('=') ? a.slice(a.indexOf('=') + 1) : (argv[i + 1] ?? '');
        const rest = a.includes('=') ? argv.slice(i + 1) : argv.slice(i + 2);
        return [...str.split(/\s+/).filter(Boolean), ...rest];
      }
      i += spec.valued.includes(name) && !a.includes('=') ? 2 : 1;
      continue;
    }
    if (spec.assignments && /^[A-Za-z_][A-Za-z0-9_]*=/.test(a)) {
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
  return i < argv.length ? argv.slice(i) : null;
}

/**
 * Every argv a command would run: itself, what its wrappers run, `find -exec` commands, and
 * (as token sequences) the code given to `sh -c` or `eval`.
 */
export function effectiveCommands(argv: readonly string[]): string[][] {
  const out: string[][] = [];
  const queue: Array<{ argv: readonly string[]; depth: number }> = [{ argv, depth: 0 }];
  while (queue.length > 0) {
    const { argv: cur, depth } = queue.shift() as { argv: readonly string[]; depth: number };
    if (cur.length === 0) continue;
    out.push([...cur]);
    if (depth >= MAX_UNWRAP) continue;
    const name = baseName(cur[0]);
    const inner = unwrapOnce(cur);
    if (inner) queue.push({ argv: inner, depth: depth + 1 });
    if (SHELLS.has(name) || name === 'eval' || name === 'su' || name === 'runuser') {
      // the code, read like an unreadable line: every word may start a command
      let starts = 0;
      for (const seg of scanSegments(cur.slice(1).join(' ')))
        for (let i = 0; i < seg.length && starts < MAX_SHELL_STARTS; i++, starts++)
          queue.push({ argv: seg.slice(i), depth: MAX_UNWRAP });
    }
    if (name === 'find') {
      for (let i = 1; i < cur.length; i++) {
        if (!FIND_EXEC.has(cur[i])) continue;
        const end = cur.findIndex((w, j) => j > i && (w === ';' || w === '+'));
        queue.push({ argv: cur.slice(i + 1, end === -1 ? cur.length : end), depth: depth + 1 });
      }
    }
  }
  return out;
}

/** Why no allow rule can match this command (it runs, or changes how the shell runs, others), or null. */
export function unallowableReason(cmd: SimpleCommand): string | null {
  const name = baseName(cmd.argv[0]);
  if (WRAPPERS[name] || SHELLS.has(name)) return `${name} runs other commands`;
  if (SHELL_STATE.has(name)) return `${name} changes how the shell runs later commands`;
  if (name === 'find' && cmd.argv.some((a) => FIND_EXEC.has(a))) return 'find -exec runs other commands';
  if (cmd.assignments.length > 0) return 'variable assignments before a command';
  const write = cmd.redirections.find((r) => isWriteRedirection(r.op) && !HARMLESS_TARGETS.has(r.target));
  if (write) return `redirection writes ${write.target}`;
  return null;
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

export interface CommandPattern {
  /** As written: for allow rules. */
  exact(argv: readonly string[]): boolean;
  /** By what runs (base name, flags as a set, positional words by prefix): for deny and require rules. */
  normalised(argv: readonly string[]): boolean;
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
    normalised: (argv) => {
      const n = normaliseArgv(argv);
      if (
        programMatcher !== null &&
        !(typeof programMatcher === 'string' ? n.program === programMatcher : programMatcher.test(n.program))
      )
        return false;
      for (const f of norm.flags) if (!n.flags.has(f)) return false;
      return prefixMatch(positional, n.positional);
    },
  };
}

/** Deny/require matching over a command and everything it runs. */
export function matchesWhatRuns(pattern: CommandPattern, argv: readonly string[]): boolean {
  return effectiveCommands(argv).some((a) => pattern.normalised(a));
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
