import { useCallback, useState } from 'react';
import type { AdminBudgetList, BudgetDimension, BudgetLimitUse, BudgetLimitsDto, BudgetStatus } from '@skald/contracts';
import type { Api } from '../api';
import { useLoad, type AdminUser } from '../admin-load';

const num = new Intl.NumberFormat('en-US');
const LABELS: Record<BudgetDimension, string> = {
  tokens_per_day: 'Tokens a day',
  tokens_per_month: 'Tokens a month',
  cost_usd_per_day: 'Cost a day (USD)',
  cost_usd_per_month: 'Cost a month (USD)',
};
/** Every dimension, in the order the labels list them (the record's type asks for each). */
const BUDGET_DIMENSIONS = Object.keys(LABELS) as BudgetDimension[];
const isCost = (d: BudgetDimension): boolean => d.startsWith('cost');
const amount = (d: BudgetDimension, n: number): string => (isCost(d) ? `$${n.toFixed(2)}` : num.format(n));
const setBy = (l: BudgetLimitUse): string =>
  l.set_by === 'group' ? `group ${l.group ?? ''}` : l.set_by === 'user' ? 'set for this user' : 'deployment default';

/** Limits as typed: an empty field is no limit. */
export type LimitsDraft = Record<BudgetDimension, string>;
export const draftOf = (l: BudgetLimitsDto | null): LimitsDraft =>
  Object.fromEntries(BUDGET_DIMENSIONS.map((d) => [d, l?.[d] === null || !l ? '' : String(l[d])])) as LimitsDraft;
export const limitsOf = (d: LimitsDraft): BudgetLimitsDto =>
  Object.fromEntries(BUDGET_DIMENSIONS.map((k) => [k, d[k].trim() === '' ? null : Number(d[k])])) as BudgetLimitsDto;

/** The four limits as inputs (empty: no limit), for a group's or a user's form. */
export function LimitFields({
  value,
  onChange,
  idPrefix,
}: {
  value: LimitsDraft;
  onChange: (v: LimitsDraft) => void;
  idPrefix: string;
}) {
  return (
    <fieldset className="budget-fields">
      <legend>Budget (empty: no limit; days and months in UTC)</legend>
      {BUDGET_DIMENSIONS.map((d) => (
        <label key={d} htmlFor={`${idPrefix}-${d}`}>
          {LABELS[d]}
          <input
            id={`${idPrefix}-${d}`}
            type="number"
            min={0}
            step={isCost(d) ? 0.01 : 1}
            inputMode={isCost(d) ? 'decimal' : 'numeric'}
            placeholder="no limit"
            value={value[d]}
            onChange={(e) => onChange({ ...value, [d]: e.target.value })}
          />
        </label>
      ))}
    </fieldset>
  );
}

/** Each limit in force with its use and reset, as a table (empty: a sentence). */
function LimitTable({ limits, caption }: { limits: BudgetLimitUse[]; caption: string }) {
  if (limits.length === 0) return <p>No limit: model calls are not capped.</p>;
  return (
    <table className="budget-table">
      <caption className="sr-only">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Limit</th>
          <th scope="col">Used</th>
          <th scope="col">Set by</th>
          <th scope="col">Resets (UTC)</th>
        </tr>
      </thead>
      <tbody>
        {limits.map((l) => (
          <tr key={l.dimension}>
            <th scope="row">
              {LABELS[l.dimension]}: {amount(l.dimension, l.limit)}
            </th>
            <td>
              <meter min={0} max={100} value={Math.min(l.percent, 100)} aria-hidden="true" />{' '}
              {amount(l.dimension, l.used)} ({l.percent} %)
            </td>
            <td>{setBy(l)}</td>
            <td>{l.resets_at.slice(0, 16).replace('T', ' ')}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Account → Usage: the caller's limits in force, what they used and when each resets. */
export function MyBudget({ api }: { api: Api }) {
  const [status, error] = useLoad(useCallback(() => api.get<BudgetStatus>('/api/llm/budget'), [api]));
  return (
    <section aria-labelledby="my-budget-h" className="budget">
      <h3 id="my-budget-h">Your limits</h3>
      {error ? <p role="alert">{error}</p> : null}
      {status ? <LimitTable limits={status.limits} caption="Your limits" /> : error ? null : <p>Loading…</p>}
    </section>
  );
}

/**
 * Admin → Usage, Budgets: the users near a limit (80 % or more of any), and a user's own limits,
 * which replace their groups' (a group's budget is set in Admin → Groups).
 */
export function AdminBudgets({ api }: { api: Api }) {
  const [near, error, reload] = useLoad(
    useCallback(() => api.get<AdminBudgetList>('/api/admin/budgets?min_percent=80'), [api]),
  );
  const [users] = useLoad(useCallback(() => api.get<{ items: AdminUser[] }>('/api/admin/users'), [api]));
  return (
    <section aria-labelledby="budgets-h" className="budget">
      <h3 id="budgets-h">Budgets</h3>
      <p>
        Users at 80 % or more of a limit. A user&apos;s own limits replace their groups&apos; (set a group&apos;s in
        Groups); a user without either has the deployment&apos;s default.
      </p>
      {error ? <p role="alert">{error}</p> : null}
      {near ? (
        near.items.length === 0 ? (
          <p>Nobody is near a limit.</p>
        ) : (
          <ul className="budget-near" aria-label="users near a limit">
            {near.items.map((u) => (
              <li key={u.user_id}>
                <strong>{u.email ?? u.user_id}</strong>
                <LimitTable limits={u.limits} caption={`Limits of ${u.email ?? u.user_id}`} />
              </li>
            ))}
          </ul>
        )
      ) : null}
      <UserBudgetForm api={api} users={users?.items ?? []} onChange={reload} />
    </section>
  );
}

function UserBudgetForm({ api, users, onChange }: { api: Api; users: AdminUser[]; onChange: () => void }) {
  const [userId, setUserId] = useState('');
  const [status, setStatus] = useState<BudgetStatus | null>(null);
  const [draft, setDraft] = useState(draftOf(null));
  const [message, setMessage] = useState('');
  const show = (s: BudgetStatus) => {
    setStatus(s);
    setDraft(draftOf(s.user_limits));
  };
  const fail = (e: unknown) => setMessage(e instanceof Error ? e.message : String(e));
  return (
    <form
      className="budget-user-form"
      aria-label="a user's limits"
      onSubmit={(e) => {
        e.preventDefault();
        setMessage('');
        api.put<BudgetStatus>(`/api/admin/users/${userId}/budget`, limitsOf(draft)).then((s) => {
          show(s);
          setMessage('Saved.');
          onChange();
        }, fail);
      }}
    >
      <h4>A user&apos;s own limits</h4>
      <label>
        User
        <select
          value={userId}
          onChange={(e) => {
            setUserId(e.target.value);
            setStatus(null);
            setMessage('');
            if (e.target.value) api.get<BudgetStatus>(`/api/admin/users/${e.target.value}/budget`).then(show, fail);
          }}
        >
          <option value="">Choose a user</option>
          {users.map((u) => (
            <option key={u.id} value={u.id}>
              {u.email}
            </option>
          ))}
        </select>
      </label>
      {status ? (
        <>
          <p>{status.user_limits ? 'This user has limits of their own.' : "This user has their groups' limits."}</p>
          <LimitTable limits={status.limits} caption="Limits in force" />
          <LimitFields value={draft} onChange={setDraft} idPrefix="user-budget" />
          <span className="budget-actions">
            <button type="submit">Save the user&apos;s limits</button>
            {status.user_limits ? (
              <button
                type="button"
                onClick={() =>
                  void api
                    .delete(`/api/admin/users/${userId}/budget`)
                    .then(() => api.get<BudgetStatus>(`/api/admin/users/${userId}/budget`).then(show, fail), fail)
                    .then(onChange)
                }
              >
                Use their groups&apos; limits
              </button>
            ) : null}
          </span>
        </>
      ) : null}
      {message ? <p role="status">{message}</p> : null}
    </form>
  );
}
