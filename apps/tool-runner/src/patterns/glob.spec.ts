import fc from 'fast-check';
import { matchesGlob } from 'node:path';
import { RE2JS } from 're2js';
import { recordAttackSuite } from '@skald/testing/attack-suite';
import { GLOB_MAX_CHARS, GlobError, globSubject, globToRe2 } from './glob';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

/** The glob as grep_files applies it (the pool runs the same expression in a worker). */
function matcher(glob: string): (rel: string) => boolean {
  const g = globToRe2(glob);
  const re = RE2JS.compile(g.source);
  return (rel) => re.test(globSubject(g, rel));
}

describe('grep_files globs (RE2)', () => {
  beforeAll(() => console.log(`glob property seed ${SEED} (replay: FC_SEED=${SEED})`));

  it('matches on base names or relative paths', () => {
    const ts = matcher('*.ts');
    expect(ts('src/a.ts')).toBe(true);
    expect(ts('a.tsx')).toBe(false);
    expect(matcher('*.{ts,js}')('lib/x.js')).toBe(true);
    expect(matcher('src/**/*.ts')('src/a/b/c.ts')).toBe(true);
    expect(matcher('src/**/*.ts')('src/c.ts')).toBe(true);
    expect(matcher('src/**/*.ts')('lib/c.ts')).toBe(false);
    expect(matcher('src/*.ts')('src/a/b.ts')).toBe(false);
    expect(matcher('file?.[ch]')('file1.c')).toBe(true);
    expect(matcher('[!a]*')('bcd')).toBe(true);
    expect(matcher('a/[!b]/c')('a/x/c')).toBe(true);
    expect(matcher('a/[!b]c')('a//c')).toBe(false);
    expect(matcher('a.b')('aXb')).toBe(false);
    expect(matcher('(x)+')('(x)+')).toBe(true);
    expect(matcher('a$^|b')('a$^|b')).toBe(true);
    expect(matcher('[a-]')('-')).toBe(true);
    expect(matcher('[\\]')('\\')).toBe(true);
    expect(matcher(`${'**/'.repeat(50)}x.ts`)('a/b/x.ts')).toBe(true);
    expect(matcher(`${'**/'.repeat(50)}x.ts`)('x.ts')).toBe(true);
  });

  it('collapses repeated **/ and refuses globs it cannot take, naming why', () => {
    expect(globToRe2(`${'**/'.repeat(50)}x`).source).toBe('^(?:.*/)?x$');
    expect(() => globToRe2('a'.repeat(GLOB_MAX_CHARS + 1))).toThrow(
      new GlobError(`the glob is ${GLOB_MAX_CHARS + 1} characters long; the limit is ${GLOB_MAX_CHARS}`),
    );
    expect(() => globToRe2('a\0b')).toThrow(/NUL/);
    // An impossible range is RE2's to reject: the pool answers it as a syntax error.
    expect(() => RE2JS.compile(globToRe2('[z-a]').source)).toThrow(/invalid character class range/);
  });

  it('agrees with node:path matchesGlob on generated globs and paths', () => {
    const seg = fc.stringMatching(/^[ab]{1,3}$/);
    const atom = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('a', 'b') },
      { weight: 2, arbitrary: fc.constant('*') },
      { weight: 1, arbitrary: fc.constant('?') },
      { weight: 1, arbitrary: fc.constantFrom('[ab]', '[!a]', '[a-b]') },
      { weight: 1, arbitrary: fc.tuple(seg, seg).map(([x, y]) => `{${x},${y}}`) },
    );
    // `**` only as a whole segment before another one: where every glob dialect agrees on it (inside
    // a name grep_files' `**` still crosses directories; minimatch's is a `*` there).
    const segment = fc
      .array(atom, { minLength: 1, maxLength: 4 })
      .map((a) => a.join(''))
      .filter((s) => !s.includes('**'));
    const glob = fc
      .array(fc.oneof({ weight: 4, arbitrary: segment }, { weight: 1, arbitrary: fc.constant('**') }), {
        minLength: 1,
        maxLength: 4,
      })
      .filter((segs) => segs[segs.length - 1] !== '**')
      .map((segs) => segs.join('/'));
    const path = fc.array(seg, { minLength: 1, maxLength: 4 }).map((segs) => segs.join('/'));
    let cases = 0;
    fc.assert(
      fc.property(glob, fc.array(path, { minLength: 1, maxLength: 8 }), (g, paths) => {
        const ours = matcher(g);
        for (const p of paths) {
          cases++;
          const subject = g.includes('/') ? p : p.slice(p.lastIndexOf('/') + 1);
          expect([g, p, ours(p)]).toEqual([g, p, matchesGlob(subject, g)]);
        }
      }),
      { seed: SEED, numRuns: 600 },
    );
    expect(cases).toBeGreaterThan(2000);
  });

  it('matches hostile globs against hostile paths in linear time (each under 250 ms)', () => {
    const hostileAtom = fc.constantFrom('**/', '*', 'a*', '*a', '?', '{a,aa}', '{a,*}', '[!b]', 'a', '/', '**');
    const hostileGlob = fc
      .array(hostileAtom, { minLength: 1, maxLength: 200 })
      .map((a) => a.join('').slice(0, GLOB_MAX_CHARS));
    const hostilePath = fc
      .tuple(fc.integer({ min: 1, max: 4000 }), fc.constantFrom('a', 'a/', 'aa/a'), fc.constantFrom('', 'b', '!'))
      .map(([n, unit, end]) => unit.repeat(n).slice(0, 4000) + end);
    let worst = 0;
    let over = 0;
    let runs = 0;
    fc.assert(
      fc.property(hostileGlob, hostilePath, (g, p) => {
        runs++;
        const t0 = performance.now();
        matcher(g)(p);
        const ms = performance.now() - t0;
        worst = Math.max(worst, ms);
        if (ms > 250) over++;
      }),
      { seed: SEED, numRuns: 2000 },
    );
    console.log(`hostile globs: ${runs} cases, worst ${worst.toFixed(1)} ms`);
    recordAttackSuite('patterns', 'glob-property', { patterns: runs, over_bound: over });
    expect(over).toBe(0);
  });
});
