import { ResetPassword } from './account/account';
import { useCallback, useState } from 'react';
import type { ApprovalRuleDto } from '@skald/contracts';
import type { Api } from './api';
import { AuditLog } from './audit/audit-log';
import { Groups } from './admin-groups';
import { RuleName } from './admin-rule-name';
import { RuleTester } from './admin-rule-tester';
import { AdminBudgets } from './usage/budgets';
import { UsageView } from './usage/usage-report';
import { useLoad, type AdminUser, type KnownTool } from './admin-load';

const TABS = ['rules', 'tools', 'audit', 'users', 'groups', 'usage'] as const;
type Tab = (typeof TABS)[number];

/** The console's tab a location names: `#admin` the rules, `#admin/{tab}` that tab; null for any other. */
export function adminTabOf(hash: string): Tab | null {
  if (hash === '#admin') return 'rules';
  const named = hash.startsWith('#admin/') ? hash.slice('#admin/'.length) : '';
  return (TABS as readonly string[]).includes(named) ? (named as Tab) : null;
}

/**
 * The security console: rules (ordered as the gate reads them) with a tester, tool catalog, audit,
 * users, groups, LLM usage; `#admin/{tab}` opens it on a tab (`adminTabOf`).
 */
export function Admin({ api, tab: first = 'rules' }: { api: Api; tab?: Tab }) {
  const [tab, setTab] = useState<Tab>(first);
  if (api.auth.user.role !== 'admin')
    return (
      <main className="admin">
        <h2>Admin</h2>
        <p role="alert">Only administrators may open the admin console.</p>
      </main>
    );
  return (
    <main className="admin">
      <h2>Admin</h2>
      <div role="tablist" className="tabs">
        {TABS.map((t) => (
          <button
            key={t}
            type="button"
            role="tab"
            aria-selected={tab === t}
            className={tab === t ? 'tab on' : 'tab'}
            onClick={() => setTab(t)}
          >
            {t[0]!.toUpperCase() + t.slice(1)}
          </button>
        ))}
      </div>
      {tab === 'rules' ? (
        <Rules api={api} />
      ) : tab === 'tools' ? (
        <Tools api={api} />
      ) : tab === 'audit' ? (
        <AuditLog api={api} scope="everyone" />
      ) : tab === 'usage' ? (
        <>
          <AdminBudgets api={api} />
          <UsageView api={api} scope="everyone" />
        </>
      ) : tab === 'users' ? (
        <Users api={api} />
      ) : (
        <Groups api={api} />
      )}
    </main>
  );
}

const emptyRule = {
  name: '',
  tool_pattern: '',
  path_pattern: '',
  command_pattern: '',
  action: 'require',
  priority: 100,
  note: '',
};

function Rules({ api }: { api: Api }) {
  const [rules, error, reload, fail] = useLoad(
    useCallback(() => api.get<{ items: ApprovalRuleDto[] }>('/api/approval/rules'), [api]),
  );
  const [form, setForm] = useState(emptyRule);
  const [created, setCreated] = useState('');
  const create = () => {
    const body = {
      tool_pattern: form.tool_pattern,
      action: form.action,
      priority: Number(form.priority),
      ...(form.name.trim() ? { name: form.name } : {}),
      ...(form.path_pattern ? { path_pattern: form.path_pattern } : {}),
      ...(form.command_pattern ? { command_pattern: form.command_pattern } : {}),
      ...(form.note ? { note: form.note } : {}),
    };
    api.post<ApprovalRuleDto>('/api/approval/rules', body).then((rule) => {
      setForm(emptyRule);
      setCreated(rule.never_allows ? `Rule created, but it never allows anything: ${rule.never_allows}.` : '');
      reload();
    }, fail);
  };
  return (
    <section aria-label="rules">
      {error ? <p role="alert">{error}</p> : null}
      <table className="rules" role="table">
        <caption>
          Rules, in the order the gate reads them (first match wins); built-in rules are part of the gate and come first
        </caption>
        <thead role="rowgroup">
          <tr role="row">
            <th role="columnheader" scope="col">
              Priority
            </th>
            <th role="columnheader" scope="col">
              Name
            </th>
            <th role="columnheader" scope="col">
              Tool
            </th>
            <th role="columnheader" scope="col">
              Path
            </th>
            <th role="columnheader" scope="col">
              Command
            </th>
            <th role="columnheader" scope="col">
              Action
            </th>
            <th role="columnheader" scope="col">
              Note
            </th>
            <th role="columnheader" scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody role="rowgroup">
          {(rules?.items ?? []).map((r) => (
            <tr role="row" key={r.id} className={r.built_in ? 'built-in' : undefined}>
              <td role="cell" data-label="Priority">
                {r.built_in ? 'built-in' : r.priority}
              </td>
              <td role="cell" data-label="Name" className="rule-name">
                {r.built_in ? r.name : <RuleName api={api} rule={r} onDone={reload} fail={fail} />}
              </td>
              <td role="cell" data-label="Tool">
                {r.tool_pattern}
              </td>
              <td role="cell" data-label="Path">
                {r.path_pattern ?? ''}
              </td>
              <td role="cell" data-label="Command">
                {r.command_pattern ?? ''}
              </td>
              <td role="cell" data-label="Action" className={`action ${r.action}`}>
                {r.action}
                {r.never_allows ? <span className="never-allows"> — never allows: {r.never_allows}</span> : null}
              </td>
              <td role="cell" data-label="Note">
                {r.note ?? ''}
                {r.built_in && r.applies ? ` (${r.applies})` : ''}
              </td>
              <td role="cell">
                {r.built_in ? (
                  <span className="read-only" title="part of the gate: evaluated before every rule, cannot be changed">
                    read-only
                  </span>
                ) : (
                  <button
                    type="button"
                    className="danger"
                    aria-label={`delete rule “${r.name}”`}
                    onClick={() => void api.delete(`/api/approval/rules/${r.id}`).then(reload, fail)}
                  >
                    Delete
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form
        className="grid-form"
        aria-label="new rule"
        onSubmit={(e) => {
          e.preventDefault();
          create();
        }}
      >
        <label>
          Name
          <input
            value={form.name}
            onChange={(e) => setForm({ ...form, name: e.target.value })}
            placeholder="default: what it matches"
          />
        </label>
        <label>
          Tool pattern
          <input
            value={form.tool_pattern}
            onChange={(e) => setForm({ ...form, tool_pattern: e.target.value })}
            required
            placeholder="execute_cmd, @fs_write, mcp__github__*"
          />
        </label>
        <label>
          Path pattern
          <input value={form.path_pattern} onChange={(e) => setForm({ ...form, path_pattern: e.target.value })} />
        </label>
        <label>
          Command pattern
          <input value={form.command_pattern} onChange={(e) => setForm({ ...form, command_pattern: e.target.value })} />
        </label>
        <label>
          Action
          <select value={form.action} onChange={(e) => setForm({ ...form, action: e.target.value })}>
            <option value="allow">allow</option>
            <option value="require">require</option>
            <option value="deny">deny</option>
          </select>
        </label>
        <label>
          Priority
          <input
            type="number"
            value={form.priority}
            onChange={(e) => setForm({ ...form, priority: Number(e.target.value) })}
          />
        </label>
        <label>
          Note
          <input value={form.note} onChange={(e) => setForm({ ...form, note: e.target.value })} />
        </label>
        <button type="submit">Add rule</button>
        <output aria-live="polite" className="never-allows">
          {created}
        </output>
      </form>
      <RuleTester api={api} rules={rules?.items ?? []} fail={fail} />
    </section>
  );
}

function Tools({ api }: { api: Api }) {
  const [tools, error] = useLoad(useCallback(() => api.get<{ items: KnownTool[] }>('/api/approval/tools'), [api]));
  return (
    <section aria-label="tool catalog">
      {error ? <p role="alert">{error}</p> : null}
      <table>
        <caption>Every tool the gate knows: built in, synthetic, and discovered (MCP)</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Category</th>
            <th scope="col">Origin</th>
          </tr>
        </thead>
        <tbody>
          {(tools?.items ?? []).map((t) => (
            <tr key={t.name}>
              <td>{t.name}</td>
              <td>{t.category}</td>
              <td>{t.origin}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function Users({ api }: { api: Api }) {
  const [users, error, reload, fail] = useLoad(
    useCallback(() => api.get<{ items: AdminUser[] }>('/api/admin/users'), [api]),
  );
  const [form, setForm] = useState({ email: '', password: '', role: 'user' });
  return (
    <section aria-label="users">
      {error ? <p role="alert">{error}</p> : null}
      <table>
        <caption>Users</caption>
        <thead>
          <tr>
            <th scope="col">Email</th>
            <th scope="col">Role</th>
            <th scope="col">Status</th>
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(users?.items ?? []).map((u) => (
            <tr key={u.id}>
              <td>{u.email}</td>
              <td>{u.role}</td>
              <td>{u.disabled ? 'disabled' : 'active'}</td>
              <td>
                <button
                  type="button"
                  onClick={() =>
                    void api.patch(`/api/admin/users/${u.id}`, { disabled: !u.disabled }).then(reload, fail)
                  }
                >
                  {u.disabled ? 'Enable' : 'Disable'} <span className="sr-only">{u.email}</span>
                </button>{' '}
                <ResetPassword api={api} user={u} onDone={reload} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form
        className="grid-form"
        aria-label="new user"
        onSubmit={(e) => {
          e.preventDefault();
          api.post('/api/admin/users', form).then(() => {
            setForm({ email: '', password: '', role: 'user' });
            reload();
          }, fail);
        }}
      >
        <label>
          Email
          <input
            type="email"
            value={form.email}
            onChange={(e) => setForm({ ...form, email: e.target.value })}
            required
          />
        </label>
        <label>
          Password
          <input
            type="password"
            value={form.password}
            onChange={(e) => setForm({ ...form, password: e.target.value })}
            required
            minLength={8}
          />
        </label>
        <label>
          Role
          <select value={form.role} onChange={(e) => setForm({ ...form, role: e.target.value })}>
            <option value="user">user</option>
            <option value="admin">admin</option>
          </select>
        </label>
        <button type="submit">Add user</button>
      </form>
    </section>
  );
}
