import fc from 'fast-check';
import { RE2JS } from 're2js';
import { recordAttackSuite } from '@skald/testing';
import { evaluate } from './rule-engine';
import { GateInput, RuleRow } from './gate-input';
import { RuleSet } from './rule-set';
import { anyCharsGlob, pathGlob, RULE_PATH_MAX_CHARS } from './rule-glob';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

/** The reference: the glob as an RE2 expression, matched by re2js. */
function reference(pattern: string, star: string): (v: string) => boolean {
  const body = pattern
    .split(/(\*\*|\*)/)
    .map((part) => (part === '**' ? '.*' : part === '*' ? star : RE2JS.quote(part)))
    .join('');
  const re = RE2JS.compile(`^${body}$`, RE2JS.DOTALL);
  return (v) => re.test(v);
}

let ord = 0;
const row = (r: Partial<RuleRow> & { toolPattern: string; action: string }): RuleRow => ({
  id: `00000000-0000-4000-9000-${String(++ord).padStart(12, '0')}`,
  pathPattern: null,
  commandPattern: null,
  agentId: null,
  source: null,
  securityGroup: null,
  priority: 100,
  ord,
  ...r,
});
const call = (toolName: string, args: Record<string, unknown>): GateInput => ({
  toolName,
  arguments: args,
  agentId: 'main',
  source: 'web',
  isAdmin: false,
});

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
        for (const v of values) {
          cases++;
          expect([p, v, any.test(v)]).toEqual([p, v, anyRef(v)]);
          expect([p, v, path.test(v)]).toEqual([p, v, pathRef(v)]);
        }
      }),
      { seed: SEED, numRuns: 2000 },
    );
    expect(cases).toBeGreaterThan(2000);
  });

  it('evaluate a 64 KB command against 1,000 rules with hostile globs within the bound', () => {
    const hostile = fc.sample(
      fc
        .array(fc.constantFrom('a*', '*a', 'a', '*', '**', 'aa*'), { minLength: 5, maxLength: 200 })
        .map((a) => a.join('').slice(0, 500)),
      { seed: SEED, numRuns: 1000 },
    );
    const rules = new RuleSet([
      ...hostile
        .slice(0, 500)
        .map((g) => row({ toolPattern: 'execute_cmd', commandPattern: `echo ${g}b`, action: 'deny' })),
      ...hostile
        .slice(500, 900)
        .map((g) => row({ toolPattern: '@fs_read', pathPattern: `/workspace/${g}b`, action: 'deny' })),
      ...hostile.slice(900).map((g) => row({ toolPattern: `${g.replace(/\*\*/g, '*')}b`, action: 'deny' })),
      row({ toolPattern: '*', action: 'require', priority: 999_999 }),
    ]);
    expect(rules.size).toBe(1001);
    const calls = [
      call('execute_cmd', { command: `echo ${'a'.repeat(65_530)}` }),
      call('execute_cmd', { command: `echo ${'a/'.repeat(32_765)}` }),
      call('read_file', { path: 'a'.repeat(RULE_PATH_MAX_CHARS - 11) }),
      call('read_file', { path: 'a/'.repeat(RULE_PATH_MAX_CHARS / 2 - 6) }),
      call('read_file', { path: 'a'.repeat(65_536) }),
      call(`${'a'.repeat(65_536)}`, {}),
    ];
    // Values that pass the glob's first and last literal, so the middle is searched.
    const ending = [
      call('execute_cmd', { command: `echo ${'a'.repeat(65_530)}b` }),
      call('read_file', { path: `${'a'.repeat(RULE_PATH_MAX_CHARS - 12)}b` }),
      call(`${'a'.repeat(65_536)}b`, {}),
    ];
    let worst = 0;
    let over = 0;
    for (const c of calls) {
      const t0 = performance.now();
      const d = evaluate(rules, c);
      const ms = performance.now() - t0;
      worst = Math.max(worst, ms);
      if (ms > 1000) over++;
      // Nothing ends in `b`: no hostile rule applies, the catch-all asks.
      expect(d.decision).toBe('require');
    }
    for (const c of ending) {
      const t0 = performance.now();
      expect(['deny', 'require']).toContain(evaluate(rules, c).decision);
      const ms = performance.now() - t0;
      worst = Math.max(worst, ms);
      if (ms > 1000) over++;
    }
    const n = calls.length + ending.length;
    console.log(`1,001 rules × ${n} hostile calls: worst ${worst.toFixed(0)} ms`);
    recordAttackSuite('patterns', 'approval-rules', { patterns: rules.size * n, over_bound: over });
    expect(over).toBe(0);
  });
});
