import { useCallback, useState } from 'react';
import type { ApprovalRuleDto, GroupDto } from '@skald/contracts';
import type { Api } from './api';
import { useLoad, type AdminUser } from './admin-load';

interface Verdict {
  decision: string;
  reason?: string;
  rule_id?: string;
}

/** `as`: `user:<id>`, `group:<id>` or '' (no group), as the select's value. */
const asBody = (as: string): Record<string, string> =>
  as.startsWith('user:')
    ? { as_user_id: as.slice('user:'.length) }
    : as.startsWith('group:')
      ? { as_group_id: as.slice('group:'.length) }
      : {};

/**
 * "What would the gate decide?": a call tested as the gate evaluates it for a user (the rules of
 * their groups' security groups, then the default rules; their role for the built-in rules), for a
 * member of one group, or for a user in no group. The verdict names the rule that decided.
 */
export function RuleTester({
  api,
  rules,
  fail,
}: {
  api: Api;
  rules: readonly ApprovalRuleDto[];
  fail: (e: unknown) => void;
}) {
  const [users] = useLoad(useCallback(() => api.get<{ items: AdminUser[] }>('/api/admin/users'), [api]));
  const [groups] = useLoad(useCallback(() => api.get<{ items: GroupDto[] }>('/api/admin/groups'), [api]));
  const [test, setTest] = useState({ tool_name: 'execute_cmd', arguments: '{"command": "ls"}', as: '' });
  const [verdict, setVerdict] = useState('');
  const run = () => {
    let args: unknown;
    try {
      args = JSON.parse(test.arguments || '{}');
    } catch {
      setVerdict('The arguments are not valid JSON.');
      return;
    }
    api
      .post<Verdict>('/api/approval/rules/test', { tool_name: test.tool_name, arguments: args, ...asBody(test.as) })
      .then((r) => {
        const rule = r.rule_id ? rules.find((x) => x.id === r.rule_id) : undefined;
        const by = rule
          ? ` (rule “${rule.name}”${rule.security_group ? `, security group ${rule.security_group}` : ''})`
          : '';
        setVerdict(`${r.decision}${by}${r.reason ? ` — ${r.reason}` : ''}`);
      }, fail);
  };
  return (
    <form
      className="grid-form rule-tester"
      aria-label="rule tester"
      onSubmit={(e) => {
        e.preventDefault();
        run();
      }}
    >
      <h3>What would the gate decide?</h3>
      <label>
        Tool name
        <input value={test.tool_name} onChange={(e) => setTest({ ...test, tool_name: e.target.value })} />
      </label>
      <label>
        Arguments (JSON)
        <input value={test.arguments} onChange={(e) => setTest({ ...test, arguments: e.target.value })} />
      </label>
      <label>
        Test as
        <select value={test.as} onChange={(e) => setTest({ ...test, as: e.target.value })}>
          <option value="">a user in no group (default rules)</option>
          <optgroup label="User (their groups' rules, then the default rules)">
            {(users?.items ?? []).map((u) => (
              <option key={u.id} value={`user:${u.id}`}>
                {u.email}
              </option>
            ))}
          </optgroup>
          <optgroup label="Member of one group">
            {(groups?.items ?? []).map((g) => (
              <option key={g.id} value={`group:${g.id}`}>
                {g.name}
              </option>
            ))}
          </optgroup>
        </select>
      </label>
      <button type="submit">Test</button>
      <output aria-live="polite">{verdict}</output>
    </form>
  );
}
