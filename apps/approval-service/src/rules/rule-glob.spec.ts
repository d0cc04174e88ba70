import fc from 'fast-check';
import { RE2JS } from 're2js';
import { anyCharsGlob, pathGlob } from './rule-glob';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

/** The references compiled so far: a glob of at most 8 parts from 6 recurs often among 2,000 runs. */
const references = new Map<string, (v: string) => boolean>();

/** The reference: the glob as an RE2 expression, matched by re2js. */
function reference(pattern: string, star: string): (v: string) => boolean {
  const key = `${star} ${pattern}`;
  const known = references.get(key);
  if (known) return known;
  const body = pattern
    .split(/(\*\*|\*)/)
    .map((part) => (part === '**' ? '.*' : part === '*' ? star : RE2JS.quote(part)))
    .join('');
  const re = RE2JS.compile(`^${body}$`, RE2JS.DOTALL);
  const matches = (v: string): boolean => re.test(v);
  references.set(key, matches);
  return matches;
}

/** The globs' meaning; their time on hostile input is rule-glob.serial-spec.ts's (a wall-clock bound). */
describe('rule globs (linear time)', () => {
  beforeAll(() => console.log(`rule glob property seed ${SEED} (replay: FC_SEED=${SEED})`));

  it('match tool names, command words and paths as the rules mean them', () => {
    expect(anyCharsGlob('mcp__*__read*').test('mcp__git__read_file')).toBe(true);
    expect(anyCharsGlob('mcp__*__read*').test('mcp__git__write')).toBe(false);
    expect(anyCharsGlob('a*a').test('a')).toBe(false);
    expect(anyCharsGlob('a*a').test('aa')).toBe(true);
    expect(anyCharsGlob('*.txt').test('x\ny.txt')).toBe(true);
    expect(anyCharsGlob('ab').test('ab')).toBe(true);
    expect(pathGlob('/workspace/*.md').test('/workspace/a.md')).toBe(true);
    expect(pathGlob('/workspace/*.md').test('/workspace/d/a.md')).toBe(false);
    expect(pathGlob('/workspace/**.md').test('/workspace/d/a.md')).toBe(true);
    expect(pathGlob('/workspace/**/x').test('/workspace/a/b/x')).toBe(true);
    expect(pathGlob('/a.b/(x)').test('/a.b/(x)')).toBe(true);
  });

  it('agree with an RE2 reference on generated globs and values', () => {
    const glob = fc.array(fc.constantFrom('a', 'b', '*', '**', '/', '.'), { minLength: 1, maxLength: 8 });
    const value = fc.array(fc.constantFrom('a', 'b', '/', '.', '\n'), { maxLength: 10 }).map((a) => a.join(''));
    let cases = 0;
    fc.assert(
      fc.property(glob, fc.array(value, { minLength: 1, maxLength: 10 }), (g, values) => {
        const p = g.join('');
        const any = anyCharsGlob(p);
        const anyRef = reference(p, '.*');
        const path = pathGlob(p);
        const pathRef = reference(p, '[^/]*');
        // the disagreements, asserted once per run (each expect costs a stack capture; 2,000 runs × 10 values)
        const disagree: unknown[] = [];
        for (const v of values) {
          cases++;
          if (any.test(v) !== anyRef(v)) disagree.push(['anyChars', p, v, any.test(v)]);
          if (path.test(v) !== pathRef(v)) disagree.push(['path', p, v, path.test(v)]);
        }
        expect(disagree).toEqual([]);
      }),
      { seed: SEED, numRuns: 2000 },
    );
    expect(cases).toBeGreaterThan(2000);
  });
});
