import { useCallback, useState } from 'react';
import type { GroupDto } from '@skald/contracts';
import type { Api } from './api';
import { useLoad, type AdminUser } from './admin-load';
import { draftOf, LimitFields, limitsOf } from './usage/budgets';

/** A comma-separated list as typed: empty means "all" (null) for the allow-lists. */
const listOf = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
const allOrList = (text: string): string[] | null => (listOf(text).length === 0 ? null : listOf(text));
const shown = (list: string[] | null): string => (list === null ? '' : list.join(', '));

/**
 * Admin console, Groups: a user's groups decide which agents and LLM clients they may use (empty:
 * all; a user in no group may use everything) and the approval security groups their sessions run
 * under. Memberships from the identity provider's claim are shown, and replaced at each login.
 */
export function Groups({ api }: { api: Api }) {
  const [groups, error, reload, fail] = useLoad(
    useCallback(() => api.get<{ items: GroupDto[] }>('/api/admin/groups'), [api]),
  );
  const [users] = useLoad(useCallback(() => api.get<{ items: AdminUser[] }>('/api/admin/users'), [api]));
  const [name, setName] = useState('');
  return (
    <section aria-label="groups" className="groups">
      {error ? <p role="alert">{error}</p> : null}
      <p>
        A user&apos;s groups decide the agents and LLM clients they may use (an empty list allows all; a user in no
        group may use everything), the security groups whose rules the gate evaluates before the default rules, and a
        budget: each member&apos;s limits (of several groups with a budget, the most generous applies). Changes apply
        from the user&apos;s next turn.
      </p>
      <form
        className="grid-form"
        aria-label="new group"
        onSubmit={(e) => {
          e.preventDefault();
          api.post('/api/admin/groups', { name }).then(() => {
            setName('');
            reload();
          }, fail);
        }}
      >
        <label>
          Group name
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={128} />
        </label>
        <button type="submit">Add group</button>
      </form>
      {(groups?.items ?? []).map((g) => (
        <GroupCard key={g.id} api={api} group={g} users={users?.items ?? []} onChange={reload} fail={fail} />
      ))}
    </section>
  );
}

function GroupCard(props: {
  api: Api;
  group: GroupDto;
  users: AdminUser[];
  onChange: () => void;
  fail: (e: unknown) => void;
}) {
  const { api, group: g, users, onChange, fail } = props;
  const [form, setForm] = useState({
    name: g.name,
    description: g.description,
    agents: shown(g.allowed_agents),
    clients: shown(g.allowed_llm_clients),
    security: g.security_groups.join(', '),
  });
  const [budget, setBudget] = useState(() => draftOf(g.budget));
  const [adding, setAdding] = useState('');
  const id = `group-${g.id}`;
  const members = new Set(g.members.filter((m) => m.source === 'admin').map((m) => m.user_id));
  const save = () =>
    api
      .patch(`/api/admin/groups/${g.id}`, {
        name: form.name,
        description: form.description,
        allowed_agents: allOrList(form.agents),
        allowed_llm_clients: allOrList(form.clients),
        security_groups: listOf(form.security),
        budget: limitsOf(budget),
      })
      .then(onChange, fail);
  const change = (body: { add?: string[]; remove?: string[] }) =>
    api.post(`/api/admin/groups/${g.id}/members`, body).then(onChange, fail);
  return (
    <article className="group-card" aria-labelledby={`${id}-h`}>
      <h3 id={`${id}-h`}>
        {g.name} {g.source === 'idp' ? <span className="source-tag">from sign-in</span> : null}
      </h3>
      <form
        className="grid-form"
        aria-label={`settings of ${g.name}`}
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <label>
          Name
          <input value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} required />
        </label>
        <label>
          Description
          <input value={form.description} onChange={(e) => setForm({ ...form, description: e.target.value })} />
        </label>
        <label>
          Allowed agents
          <input value={form.agents} onChange={(e) => setForm({ ...form, agents: e.target.value })} placeholder="all" />
        </label>
        <label>
          Allowed LLM clients
          <input
            value={form.clients}
            onChange={(e) => setForm({ ...form, clients: e.target.value })}
            placeholder="all"
          />
        </label>
        <label>
          Security groups
          <input
            value={form.security}
            onChange={(e) => setForm({ ...form, security: e.target.value })}
            placeholder="none"
          />
        </label>
        <LimitFields value={budget} onChange={setBudget} idPrefix={id} />
        <button type="submit">Save</button>
      </form>
      <ul className="members" aria-label={`members of ${g.name}`}>
        {g.members.length === 0 ? <li>No members.</li> : null}
        {g.members.map((m) => (
          <li key={`${m.user_id}-${m.source}`}>
            {m.email}
            {m.source === 'idp' ? (
              <span className="source-tag">from sign-in</span>
            ) : (
              <button type="button" className="danger" onClick={() => void change({ remove: [m.user_id] })}>
                Remove <span className="sr-only">{m.email}</span>
              </button>
            )}
          </li>
        ))}
      </ul>
      <form
        className="grid-form"
        aria-label={`add a member to ${g.name}`}
        onSubmit={(e) => {
          e.preventDefault();
          if (adding) void change({ add: [adding] }).then(() => setAdding(''));
        }}
      >
        <label>
          User
          <select value={adding} onChange={(e) => setAdding(e.target.value)}>
            <option value="">Choose a user</option>
            {users
              .filter((u) => !members.has(u.id))
              .map((u) => (
                <option key={u.id} value={u.id}>
                  {u.email}
                </option>
              ))}
          </select>
        </label>
        <button type="submit">Add member</button>
        <button
          type="button"
          className="danger"
          onClick={() => {
            if (window.confirm(`Delete the group ${g.name}?`))
              void api.delete(`/api/admin/groups/${g.id}`).then(onChange, fail);
          }}
        >
          Delete group
        </button>
      </form>
    </article>
  );
}
