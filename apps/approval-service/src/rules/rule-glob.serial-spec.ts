import fc from 'fast-check';
import { recordAttackSuite } from '@skald/testing/attack-suite';
import { ruleRow } from '../testing-fixtures/rule-row';
import { evaluate } from './rule-engine';
import { GateInput } from './gate-input';
import { RuleSet } from './rule-set';
import { RULE_PATH_MAX_CHARS } from './rule-glob';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const call = (toolName: string, args: Record<string, unknown>): GateInput => ({
  toolName,
  arguments: args,
  agentId: 'main',
  source: 'web',
  isAdmin: false,
});

/**
 * The rule globs' time on hostile input, as a wall-clock bound: in the serial phase (jest.config.js), where no
 * parallel worker eats the budget. What the globs mean is rule-glob.spec.ts's.
 */
describe('rule globs (linear time): hostile input', () => {
  beforeAll(() => console.log(`rule glob hostile seed ${SEED} (replay: FC_SEED=${SEED})`));

  it('evaluate a 64 KB command against 1,000 rules with hostile globs within the bound', () => {
    const hostile = fc.sample(
      fc
        .array(fc.constantFrom('a*', '*a', 'a', '*', '**', 'aa*'), { minLength: 5, maxLength: 200 })
        .map((a) => a.join('').slice(0, 500)),
      { seed: SEED, numRuns: 1000 },
    );
    let n = 0;
    const rules = new RuleSet([
      ...hostile
        .slice(0, 500)
        .map((g) => ruleRow(++n, 'execute_cmd', 'deny', { commandPattern: `echo ${g}b`, priority: 100 })),
      ...hostile
        .slice(500, 900)
        .map((g) => ruleRow(++n, '@fs_read', 'deny', { pathPattern: `/workspace/${g}b`, priority: 100 })),
      ...hostile.slice(900).map((g) => ruleRow(++n, `${g.replace(/\*\*/g, '*')}b`, 'deny', { priority: 100 })),
      ruleRow(++n, '*', 'require', { priority: 999_999 }),
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
    const count = calls.length + ending.length;
    console.log(`1,001 rules × ${count} hostile calls: worst ${worst.toFixed(0)} ms`);
    recordAttackSuite('patterns', 'approval-rules', { patterns: rules.size * count, over_bound: over });
    expect(over).toBe(0);
  });
});
