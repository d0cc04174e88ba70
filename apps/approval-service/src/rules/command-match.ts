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

/**
 * Wrappers found by running every executable of the sandbox image as `X rm marker`, `X -- rm
 * marker`, `X 1 rm marker`, … (test/integration/wrapper-sweep.spec.ts), with their options that
 * take a separate value and the positional words they consume before the command, from each
 * program's `--help` and manual page (util-linux 2.38, coreutils 9.1, Debian 12). Options whose value
 * is optional must be glued (`prlimit --nofile=10`, `nsenter -m/proc/1/ns/mnt`), so they are flags here.
 */
export const SWEPT_WRAPPERS: ReadonlyArray<readonly [string, WrapperSpec]> = [
  [
    'unshare',
    {
      valued: ['-S', '--setuid', '-G', '--setgid', '-R', '--root', '-w', '--wd', '--propagation'].concat([
        '--map-user',
        '--map-group',
        '--map-users',
        '--map-groups',
        '--monotonic',
        '--boottime',
        '--setgroups',
      ]),
    },
  ],
  [
    'setpriv',
    {
      valued: ['--ruid', '--euid', '--rgid', '--egid', '--reuid', '--regid', '--groups', '--inh-caps'].concat(
        ['--ambient-caps', '--bounding-set', '--securebits', '--pdeathsig', '--selinux-label', '--apparmor-profile'],
        ['--landlock-access', '--landlock-rule', '--seccomp-filter'],
      ),
    },
  ],
  ['prlimit', { valued: ['-p', '--pid', '-o', '--output'] }],
  ['nsenter', { valued: ['-t', '--target', '-S', '--setuid', '-G', '--setgid'] }],
  ['fakeroot', { valued: ['-l', '--lib', '--faked', '-s', '-i', '-b'] }],
  // Every valgrind option is `--name=value`.
  ['valgrind', { valued: [] }],
  ['choom', { valued: ['-n', '--adjust', '-p', '--pid'] }],
  // `setarch ARCH [options] [program]`; its links (`linux64`, `x86_64`, …) take the arch from their name.
  ['setarch', { valued: [], leading: 1 }],
  ['linux32', { valued: [] }],
  ['linux64', { valued: [] }],
  ['x86_64', { valued: [] }],
  ['i386', { valued: [] }],
  // `runcon CONTEXT cmd` or `runcon -t TYPE cmd`: the positional is tried as the command too.
  ['runcon', { valued: ['-u', '--user', '-r', '--role', '-t', '--type', '-l', '--range'], leading: 1 }],
  ['sg', { valued: [], leading: 1 }],
  ['fakeroot-sysv', { valued: ['-l', '--lib', '--faked', '-s', '-i', '-b'] }],
  ['fakeroot-tcp', { valued: ['-l', '--lib', '--faked', '-s', '-i', '-b'] }],
  // `fstab-decode COMMAND [ARGUMENT]...`
  ['fstab-decode', { valued: [] }],
  // `logsave [-asv] LOGFILE COMMAND [ARGS]`
  ['logsave', { valued: [], leading: 1 }],
  ['heaptrack', { valued: ['-o', '--output', '-p', '--pid'] }],
  ['memusage', { valued: ['-n', '--progname', '-p', '--png', '-d', '--data', '-b', '--buffer', '-x', '-y'] }],
  ['sotruss', { valued: ['-F', '--from', '-T', '--to', '-o', '--output'] }],
  // LLVM's `not [--crash] COMMAND` (installed as `not-14`: a version suffix is ignored).
  ['not', { valued: [] }],
  ['npx', { valued: ['-p', '--package', '-c', '--call'] }],
  // `luit [options] [--] [program [args]]`: its options are single-dash words, some with a value.
  [
    'luit',
    {
      valued: ['-encoding', '-ilog', '-olog', '-argv0', '-alias', '-gl', '-gr', '-g0', '-g1', '-g2', '-g3'].concat([
        '-kgl',
        '-kgr',
        '-kg0',
        '-kg1',
        '-kg2',
        '-kg3',
      ]),
    },
  ],
  ['ssh-agent', { valued: ['-a', '-E', '-O', '-P', '-t'] }],
  ['dbus-run-session', { valued: [] }],
  [
    'dpkg-architecture',
    {
      valued: ['-a', '--host-arch', '-t', '--host-type', '-A', '--target-arch', '-T', '--target-type'].concat(
        ['-W', '--match-wildcard', '-B', '--match-bits', '-E', '--match-endian', '-q', '--query'],
        ['-e', '--equal', '-i', '--is'],
      ),
    },
  ],
];

/**
 * Programs whose arguments are joined and run by `sh -c` (`watch 'rm x'`, `script -c 'rm x'`,
 * `su -c`, `sg grp 'rm x'`, `flock f -c 'rm x'`): read like an unreadable line, every word may
 * start a command.
 */
const SHELL_CODE_ARGS = new Set(['su', 'runuser', 'script', 'sg', 'watch', 'flock', 'tmux', 'npx']);

/**
 * Programs that run code given inline, on stdin or in a file (`perl -e`, `python3 -c`, `node -e`,
 * `awk 'BEGIN{system(…)}'`, `gdb -ex`), found by the same sweep: what they run cannot be matched
 * against deny rules. Base names without a version suffix (`python3.11` is `python3`).
 */
export const RUNS_CODE_PROGRAMS: ReadonlySet<string> = new Set([
  'perl',
  'python',
  'python3',
  'node',
  'nodejs',
  'awk',
  'gawk',
  'mawk',
  'nawk',
  'tclsh',
  'wish',
  'gdb',
  'pdb',
  'npm',
  'vim',
  'vi',
  'view',
  'ex',
  'vimdiff',
  'erl',
  'escript',
]);

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
  ...Object.fromEntries(SWEPT_WRAPPERS.map(([name, spec]) => [name, spec])),
};
/** Shells and `eval`: their argument is shell code, scanned like an unreadable line. */
const SHELLS = new Set([
  'sh',
  'bash',
  'rbash',
  'dash',
  'zsh',
  'ksh',
  'mksh',
  'ash',
  'fish',
  'csh',
  'tcsh',
  'busybox',
  // starts a shell that reads its commands from stdin
  'newgrp',
]);
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

/** A base name and, when it has one, the name without its version suffix (`python3.11` → `python`, `not-14` → `not`). */
function namesOf(name: string): string[] {
  const bare = /^([A-Za-z][A-Za-z_+-]*?)[-.]?[0-9]/.exec(name)?.[1];
  return bare && bare !== name ? [name, bare] : [name];
}

/** A wrapper's options, by base name (own keys only: `constructor` is no wrapper), also without a version suffix. */
function wrapperSpec(name: string): WrapperSpec | undefined {
  for (const n of namesOf(name)) if (Object.hasOwn(WRAPPERS, n)) return WRAPPERS[n];
  return undefined;
}

/** `set` holds the name, or the name without its version suffix. */
function knownIn(set: ReadonlySet<string>, name: string): boolean {
  return namesOf(name).some((n) => set.has(n));
}

/**
 * The commands a wrapper may run: with its leading positional words consumed, and (when it has
 * some) without, for wrappers where an option replaces them (`runcon -t T cmd`); empty when the
 * wrapper runs nothing (`env` alone, `command -v x`).
 */
function unwrapOnce(argv: readonly string[]): string[][] {
  const spec = wrapperSpec(baseName(argv[0]));
  if (!spec) return [];
  const out: string[][] = [];
  for (const leading of spec.leading ? [spec.leading, 0] : [0]) {
    const inner = unwrapWith(argv, spec, leading);
    if (inner && !out.some((o) => o.length === inner.length)) out.push(inner);
  }
  return out;
}

function unwrapWith(argv: readonly string[], spec: WrapperSpec, leadingWords: number): string[] | null {
  let i = 1;
  let leading = leadingWords;
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
    for (const inner of unwrapOnce(cur)) queue.push({ argv: inner, depth: depth + 1 });
    if (knownIn(SHELLS, name) || name === 'eval' || knownIn(SHELL_CODE_ARGS, name)) {
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

/** How a program is known to the gate: it runs a command (matched against deny rules), or code. */
export type RunnerKnowledge = 'runs_command' | 'runs_code';

/**
 * Whether the gate knows `program` (a path or a base name) as running a command — a wrapper, a
 * shell, `find -exec` — or as running code (an interpreter), else null. A version suffix is
 * ignored (`python3.11`, `perl5.36.0`).
 */
export function gateRunnerKnowledge(program: string): RunnerKnowledge | null {
  const name = baseName(program);
  if (wrapperSpec(name) || knownIn(SHELLS, name) || knownIn(SHELL_CODE_ARGS, name) || name === 'find')
    return 'runs_command';
  if (knownIn(RUNS_CODE_PROGRAMS, name)) return 'runs_code';
  return null;
}

/** Why no allow rule can match this command (it runs, or changes how the shell runs, others), or null. */
export function unallowableReason(cmd: SimpleCommand): string | null {
  const name = baseName(cmd.argv[0]);
  if (wrapperSpec(name) || knownIn(SHELLS, name) || knownIn(SHELL_CODE_ARGS, name))
    return `${name} runs other commands`;
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
