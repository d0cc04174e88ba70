import fc from 'fast-check';
import { evaluate, isVisible } from './rule-engine';
import { scopesOf, type GateInput, type RuleRow } from './gate-input';
import { RuleSet } from './rule-set';
import { ruleRow } from '../testing-fixtures/rule-row';

/**
 * Security groups from the owner's groups: the rules of every group the session runs under (its
 * owner's groups' and its own override) are evaluated first, together in priority order, then the
 * default rules; the rules of any other group never apply.
 */
const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

let seq = 0;
const rule = (r: Partial<RuleRow> & { toolPattern: string; action: string }): RuleRow =>
  ruleRow(++seq, r.toolPattern, r.action, { priority: 100, ...r });
const call = (over: Partial<GateInput> = {}): GateInput => ({
  toolName: 'restart',
  arguments: {},
  agentId: 'main',
  source: 'web',
  isAdmin: false,
  ...over,
});

const RULES = new RuleSet([
  rule({ toolPattern: '*', action: 'require', priority: 999999 }),
  rule({ toolPattern: 'restart', action: 'deny', priority: 10 }),
  rule({ toolPattern: 'restart', securityGroup: 'ops', action: 'allow', priority: 900 }),
  rule({ toolPattern: 'restart', securityGroup: 'lab', action: 'require', priority: 500 }),
  rule({ toolPattern: 'web_fetch', securityGroup: 'lab', action: 'deny', priority: 1 }),
]);

describe('security groups of the owner groups', () => {
  it('no group: the default rules', () => {
    expect(evaluate(RULES, call()).decision).toBe('deny');
    expect(evaluate(RULES, call({ securityGroups: [] })).decision).toBe('deny');
  });

  it("a group's rules come before the default rules, whatever their priority", () => {
    expect(evaluate(RULES, call({ securityGroups: ['ops'] })).decision).toBe('allow');
    expect(evaluate(RULES, call({ securityGroups: ['lab'] })).decision).toBe('require');
  });

  it('several groups: their rules together in priority order; the override joins them', () => {
    expect(evaluate(RULES, call({ securityGroups: ['ops', 'lab'] })).decision).toBe('require');
    expect(evaluate(RULES, call({ securityGroups: ['ops'], securityGroup: 'lab' })).decision).toBe('require');
    expect(evaluate(RULES, call({ securityGroup: 'ops' })).decision).toBe('allow');
  });

  it('a group no session runs under never applies, and visibility follows the same groups', () => {
    expect(evaluate(RULES, call({ securityGroups: ['finance'] })).decision).toBe('deny');
    expect(isVisible(RULES, 'web_fetch', { agentId: 'main', source: 'web', securityGroups: ['lab'] })).toBe(false);
    expect(isVisible(RULES, 'web_fetch', { agentId: 'main', source: 'web', securityGroups: ['ops'] })).toBe(true);
    expect(isVisible(RULES, 'web_fetch', { agentId: 'main', source: 'web', securityGroup: 'lab' })).toBe(false);
  });

  it('the order and repetition of groups do not change a decision (property)', () => {
    const group = fc.constantFrom('ops', 'lab', 'finance', '');
    fc.assert(
      fc.property(fc.array(group, { maxLength: 6 }), fc.option(group, { nil: undefined }), (groups, own) => {
        const a = evaluate(RULES, call({ securityGroups: groups, securityGroup: own }));
        const b = evaluate(RULES, call({ securityGroups: [...groups].reverse().concat(groups), securityGroup: own }));
        expect(b).toEqual(a);
        expect(scopesOf({ securityGroups: groups, securityGroup: own })).toEqual(
          [...new Set([...groups, ...(own ? [own] : [])].filter((g) => g !== ''))].sort(),
        );
      }),
      { seed: SEED, numRuns: 1000 },
    );
  });
});
