import type { RuleRow } from '../rules/gate-input';

/** A stored rule for specs: id and priority from `n` (lower first), every condition but the tool empty. */
export const ruleRow = (n: number, toolPattern: string, action: string, extra: Partial<RuleRow> = {}): RuleRow => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  toolPattern,
  pathPattern: null,
  commandPattern: null,
  agentId: null,
  source: null,
  securityGroup: null,
  action,
  priority: n,
  ord: n,
  name: `rule ${n}`,
  ...extra,
});
