import { ResetPassword } from './account/account';
import { useCallback, useEffect, useState } from 'react';
import type { Role, ApprovalRuleDto, AuditItem } from '@skald/contracts';

interface KnownTool {
  name: string;
  category: string;
  origin: string;
}
import { errorText, type Api } from './api';

type Tab = 'rules' | 'tools' | 'audit' | 'users';

/** The security console: rules (ordered as the gate reads them) with a tester, tool catalog, audit, users. */
export function Admin({ api }: { api: Api }) {
  const [tab, setTab] = useState<Tab>('rules');
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
        {(['rules', 'tools', 'audit', 'users'] as const).map((t) => (
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
        <Audit api={api} />
      ) : (
        <Users api={api} />
      )}
    </main>
  );
}

function useLoad<T>(load: () => Promise<T>): [T | null, string, () => void, (e: unknown) => void] {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState('');
  const fail = useCallback((e: unknown) => setError(errorText(e)), []);
  const reload = useCallback(() => {
    load().then((d) => {
      setData(d);
      setError('');
    }, fail);
  }, [load, fail]);
  useEffect(reload, [reload]);
  return [data, error, reload, fail];
}

const emptyRule = {
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
  const [test, setTest] = useState({ tool_name: 'execute_cmd', arguments: '{"command": "ls"}' });
  const [verdict, setVerdict] = useState('');
  const [created, setCreated] = useState('');
  const create = () => {
    const body = {
      tool_pattern: form.tool_pattern,
      action: form.action,
      priority: Number(form.priority),
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
  const runTest = () => {
    let args: unknown;
    try {
      args = JSON.parse(test.arguments || '{}');
    } catch {
      setVerdict('The arguments are not valid JSON.');
      return;
    }
    api
      .post<{ decision: string; reason?: string; rule_id?: string }>('/api/approval/rules/test', {
        tool_name: test.tool_name,
        arguments: args,
      })
      .then((r) => setVerdict(`${r.decision}${r.reason ? ` — ${r.reason}` : ''}`), fail);
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
                    aria-label={`delete rule ${r.tool_pattern} ${r.priority}`}
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
      <form
        className="grid-form"
        aria-label="rule tester"
        onSubmit={(e) => {
          e.preventDefault();
          runTest();
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
        <button type="submit">Test</button>
        <output aria-live="polite">{verdict}</output>
      </form>
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

function Audit({ api }: { api: Api }) {
  const [page, setPage] = useState(1);
  const [audit, error] = useLoad(
    useCallback(
      () => api.get<{ items: AuditItem[]; total: number }>(`/api/approval/audit?page=${page}&per_page=50`),
      [api, page],
    ),
  );
  // the human who answered, by email (the audit records their id)
  const [users] = useLoad(useCallback(() => api.get<{ items: AdminUser[] }>('/api/admin/users'), [api]));
  const emails = new Map((users?.items ?? []).map((u) => [u.id, u.email]));
  return (
    <section aria-label="audit log">
      {error ? <p role="alert">{error}</p> : null}
      <table>
        <caption>Audit: every decision, automatic or human ({audit?.total ?? 0})</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Tool</th>
            <th scope="col">Decision</th>
            <th scope="col">By</th>
            <th scope="col">Note</th>
          </tr>
        </thead>
        <tbody>
          {(audit?.items ?? []).map((a) => (
            <tr key={a.id}>
              <td>{new Date(a.at).toLocaleString()}</td>
              <td>{a.tool_name}</td>
              <td>{a.decision}</td>
              <td>{a.by === 'human' ? humanBy(a, emails) : a.by}</td>
              <td>{a.note ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="actions">
        <button type="button" disabled={page <= 1} onClick={() => setPage(page - 1)}>
          Newer
        </button>
        <button type="button" disabled={!audit || page * 50 >= audit.total} onClick={() => setPage(page + 1)}>
          Older
        </button>
      </div>
    </section>
  );
}

const CHANNELS: Record<NonNullable<AuditItem['channel']>, string> = {
  card: 'the chat card',
  inbox: 'the inbox',
  cli: 'the CLI',
  push: 'a notification',
  api: 'the API',
};

/** "ann@example.com in the inbox": who answered and where, for an audit row of a human's answer. */
function humanBy(a: AuditItem, emails: ReadonlyMap<string, string>): string {
  const who = a.actor_user_id ? (emails.get(a.actor_user_id) ?? a.actor_user_id) : 'a human';
  return a.channel ? `${who} in ${CHANNELS[a.channel]}` : who;
}

interface AdminUser {
  id: string;
  email: string;
  role: Role;
  disabled: boolean;
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
