import { parseShell, unallowableReason } from './shell-parser';

const argvs = (line: string): string[][] => {
  const r = parseShell(line);
  if (!r.ok) throw new Error(r.reason);
  return r.commands.map((c) => c.argv);
};

describe('shell parser', () => {
  it.each([
    ['ls -la', [['ls', '-la']]],
    ['a; b && c || d | e & f', [['a'], ['b'], ['c'], ['d'], ['e'], ['f']]],
    ['a\nb', [['a'], ['b']]],
    ['echo \'a b\' "c $HOME" d\\ e', [['echo', 'a b', 'c $HOME', 'd e']]],
    [
      'echo $(ls -a | wc -l)',
      [
        ['ls', '-a'],
        ['wc', '-l'],
        ['echo', '$(…)'],
      ],
    ],
    ['echo `date`', [['date'], ['echo', '`…`']]],
    // a redirection of a group is kept as a command without a name: it writes `log`, so it asks
    ['(cd x && make) > log 2>&1', [['cd', 'x'], ['make'], []]],
    ['cat <<EOF\n$(id)\nEOF\npwd', [['cat'], ['id'], ['pwd']]],
    ["cat <<-'X'\n\t$(id)\n\tX", [['cat']]],
    ['ls \\\n  -la', [['ls', '-la']]],
    ['ls &&\n pwd', [['ls'], ['pwd']]],
  ])('%j', (line, expected) => {
    expect(argvs(line)).toEqual(expected);
  });

  it.each([
    'echo "x',
    "echo 'x",
    'if true; then ls; fi',
    'f() { ls; }',
    'ls |',
    '(ls',
    'ls )',
    'echo $((1))',
    'cat <<EOF\nno end',
  ])('fails closed on %j', (line) => {
    expect(parseShell(line).ok).toBe(false);
  });

  it('records file writes by redirection, not fd duplication or /dev/null', () => {
    const r = parseShell('a > out.txt; b 2>&1; c >/dev/null; d >> log; e &> both');
    expect(r.ok && r.commands.map((c) => c.writes)).toEqual([['out.txt'], [], [], ['log'], ['both']]);
  });

  it('names why a command can never be allowed', () => {
    const r = parseShell('sudo ls; env X=1 a; find . -exec rm {} +; X=1 a; $X; ls');
    expect(r.ok && r.commands.map((c) => unallowableReason(c) !== null)).toEqual([true, true, true, true, true, false]);
  });
});
