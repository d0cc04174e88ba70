import { ruleRow } from '../testing-fixtures/rule-row';
import { GateInput } from './gate-input';
import { decideByRules } from './rule-engine';
import { RuleSet } from './rule-set';
import { initShellParser } from './shell-analysis';

// The gate's reason (what the model, the rule tester and the audit read) names the rule by its
// name; the id travels beside it as `ruleId`.

beforeAll(() => initShellParser());

const call = (toolName: string, args: Record<string, unknown> = {}): GateInput => ({
  toolName,
  arguments: args,
  agentId: 'main',
  source: 'web',
  isAdmin: false,
});

describe('the reason of a rule decision', () => {
  it('names the rule, its action and priority, never its id', () => {
    const rule = ruleRow(10, 'deploy', 'require', { name: 'touching prod needs a human' });
    const r = decideByRules(new RuleSet([rule]), call('deploy'));
    expect(r).toMatchObject({ decision: 'require', ruleId: rule.id });
    expect(r.reason).toBe('rule “touching prod needs a human” (require, priority 10)');
  });

  it('a command decision and a rule that fails to load name it too', () => {
    const ls = ruleRow(20, 'execute_cmd', 'allow', { commandPattern: 'ls *', name: 'listing is fine' });
    const broken = ruleRow(5, 'lab_tool', 'deny', { pathPattern: '../x', name: 'a lab rule' });
    const rules = new RuleSet([ls, broken]);
    const cmd = decideByRules(rules, call('execute_cmd', { command: 'ls -la' }));
    expect(cmd.reason).toBe('ls -la: rule “listing is fine” (allow, priority 20)');
    const lab = decideByRules(rules, call('lab_tool', { path: 'a' }));
    expect(lab.reason).toMatch(/^rule “a lab rule” failed to load \(.+\): asking$/);
    for (const r of [cmd, lab]) expect(r.reason).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
  });
});
