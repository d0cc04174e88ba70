import { isVisible, RuleRow, RuleSet } from './rule-engine';

const r = (id: number, toolPattern: string, action: string, extra: Partial<RuleRow> = {}): RuleRow => ({
  id: `00000000-0000-4000-8000-${String(id).padStart(12, '0')}`,
  toolPattern,
  pathPattern: null,
  commandPattern: null,
  agentId: null,
  source: null,
  securityGroup: null,
  action,
  priority: id,
  ord: id,
  ...extra,
});

describe('tool visibility', () => {
  const set = new RuleSet([
    r(1, 'mcp__evil__*', 'deny'),
    r(2, 'write_file', 'deny', { pathPattern: '/workspace/secrets/*' }),
    r(3, 'execute_cmd', 'deny', { agentId: 'reader' }),
    r(4, 'restart', 'deny', { securityGroup: 'locked' }),
    r(5, '*', 'require'),
  ]);
  const ctx = { agentId: 'main', source: 'web' };

  it('hides a tool whose first applicable rule is an unconditional deny', () => {
    expect(isVisible(set, 'mcp__evil__x', ctx)).toBe(false);
    expect(isVisible(set, 'execute_cmd', { ...ctx, agentId: 'reader' })).toBe(false);
    expect(isVisible(set, 'restart', { ...ctx, securityGroup: 'locked' })).toBe(false);
  });
  it('keeps a tool whose first rule is conditional, or that is denied for others only', () => {
    expect(isVisible(set, 'write_file', ctx)).toBe(true);
    expect(isVisible(set, 'execute_cmd', ctx)).toBe(true);
    expect(isVisible(set, 'restart', ctx)).toBe(true);
    expect(isVisible(set, 'mcp__good__x', ctx)).toBe(true);
  });
});
