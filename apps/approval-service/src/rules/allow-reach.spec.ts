import fc from 'fast-check';
import { neverAllows, refusal } from './allow-reach';
import { PROGRAM_SPECS } from './programs';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : 172026;

/** The words a generated command is made of: plain words, options of every kind, values. */
const WORD = fc.oneof(
  fc.constantFrom('x', 'README.md', '.', 'src', '-', '--', '-l', '-n', '-r', '-f', '-c', '-e', '-i', '-o', '-C'),
  fc.constantFrom('--version', '--help', '-V', '-h', 'status', 'log', 'diff', 'push', '1p', 's/a/b/', '{print}'),
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 6 }).filter((w) => !/[\s'"*]/.test(w)),
  fc.constantFrom('--output=x', '--file=y', '-xvf', '--to-command=sh', '--pre=sh'),
);

/** A command the pattern matches as an allow rule reads it (a prefix; `*` any word, last `*` any rest). */
function matching(pattern: string): fc.Arbitrary<string[]> {
  const words = pattern.split(' ');
  const trailingStar = words.length > 1 && words[words.length - 1] === '*';
  const body = trailingStar ? words.slice(0, -1) : words;
  return fc
    .tuple(
      fc.tuple(...body.map((w, i) => (i > 0 && w === '*' ? WORD : fc.constant(w)))),
      fc.array(WORD, { maxLength: 5 }),
    )
    .map(([head, tail]) => [...head, ...tail]);
}

/** Patterns for every program of the table, in the shapes admins write. */
const PATTERNS = PROGRAM_SPECS.flatMap((s) =>
  s.names.slice(0, 2).flatMap((n) => [n, `${n} *`, `${n} status *`, `${n} -n *`, `${n} x`, `${n} * x`]),
);

describe('allow rules that can never allow (never_allows)', () => {
  it('the reported ones are found, with the reason the gate gives', () => {
    expect(neverAllows('git *')).toMatch(/^git with every other invocation reads the workspace repository/);
    expect(neverAllows('git status')).toMatch(/hooks/);
    expect(neverAllows('git log --oneline *')).toMatch(/hooks/);
    for (const p of ['xargs *', 'env *', 'timeout 5 *', 'tee *', 'wget *', 'python3 app.py', 'sh -c *', 'less *'])
      expect([p, neverAllows(p)]).toEqual([p, expect.any(String)]);
    expect(neverAllows('env *')).toBe('env runs other commands');
  });

  it('rules that can allow something are not flagged', () => {
    for (const p of [
      'ls',
      'ls *',
      'cat *',
      'grep -r *',
      'sed -n *',
      'find . -name *',
      'python3 *',
      'rg *',
      'tar -tf *',
    ])
      expect([p, neverAllows(p)]).toEqual([p, null]);
    // a program named by a glob cannot be told
    expect(neverAllows('g* *')).toBeNull();
  });

  it('a pattern said never to allow matches no command the gate would allow (generated commands)', () => {
    const flagged = PATTERNS.filter((p) => neverAllows(p) !== null);
    expect(flagged.length).toBeGreaterThan(50);
    let checked = 0;
    for (const p of flagged) {
      fc.assert(
        fc.property(matching(p), (argv) => {
          checked++;
          expect([argv, refusal(argv)]).toEqual([argv, expect.any(String)]);
        }),
        { seed, numRuns: 40 },
      );
    }
    expect(checked).toBeGreaterThan(2000);
    process.stdout.write(
      `never_allows: ${PATTERNS.length} patterns, ${flagged.length} flagged, ${checked} generated commands of flagged patterns, 0 allowed\n`,
    );
  });
});
