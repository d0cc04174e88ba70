import { useCallback, useEffect, useState } from 'react';
import { errorText, type Api } from '../api';
import { MyBudget } from '../usage/budgets';
import { UsageView } from '../usage/usage-report';
import './account.css';

interface Token {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

const when = (iso: string | null): string => (iso ? new Date(iso).toLocaleString() : 'never');

/**
 * `#account`: the caller's password, API tokens and LLM usage. Changing the password ends every credential
 * of the caller (this page's too): `onSignedOut` takes the user back to the login.
 */
export function Account({ api, onSignedOut }: { api: Api; onSignedOut: (notice: string) => void }) {
  return (
    <main className="account">
      <h2>Account</h2>
      <p className="muted">Signed in as {api.auth.user.email}</p>
      <p>
        <a href="#notifications">Notifications</a>: what reaches you away from the chat (push on this device, e-mail,
        webhooks, quiet hours).
      </p>
      <ChangePassword api={api} onChanged={() => onSignedOut('Password changed. Sign in with the new one.')} />
      <ApiTokens api={api} />
      <MyBudget api={api} />
      <UsageView api={api} scope="mine" />
    </main>
  );
}

function ChangePassword({ api, onChanged }: { api: Api; onChanged: () => void }) {
  const [form, setForm] = useState({ current: '', next: '', confirm: '' });
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  return (
    <section aria-labelledby="pw-h">
      <h3 id="pw-h">Change password</h3>
      <form
        className="grid-form"
        aria-label="change password"
        onSubmit={(e) => {
          e.preventDefault();
          setError('');
          if (form.next !== form.confirm) {
            setError('The new passwords differ.');
            return;
          }
          setBusy(true);
          api
            .put('/api/auth/password', { current_password: form.current, new_password: form.next })
            .then(onChanged, (err: unknown) => {
              setBusy(false);
              setError(errorText(err));
            });
        }}
      >
        <label>
          Current password
          <input
            type="password"
            autoComplete="current-password"
            value={form.current}
            onChange={(e) => setForm({ ...form, current: e.target.value })}
            required
          />
        </label>
        <label>
          New password
          <input
            type="password"
            autoComplete="new-password"
            minLength={8}
            value={form.next}
            onChange={(e) => setForm({ ...form, next: e.target.value })}
            required
          />
        </label>
        <label>
          Repeat the new password
          <input
            type="password"
            autoComplete="new-password"
            minLength={8}
            value={form.confirm}
            onChange={(e) => setForm({ ...form, confirm: e.target.value })}
            required
          />
        </label>
        {error ? <p role="alert">{error}</p> : null}
        <button type="submit" disabled={busy}>
          Change password
        </button>
        <p className="muted">Every sign-in and API token of yours ends; you sign in again.</p>
      </form>
    </section>
  );
}

function ApiTokens({ api }: { api: Api }) {
  const [tokens, setTokens] = useState<Token[] | null>(null);
  const [error, setError] = useState('');
  const [name, setName] = useState('');
  const [created, setCreated] = useState<{ name: string; token: string } | null>(null);
  const [copied, setCopied] = useState(false);
  const fail = useCallback((e: unknown) => setError(errorText(e)), []);
  const reload = useCallback(() => {
    api.get<{ items: Token[] }>('/api/auth/tokens').then((r) => {
      setTokens(r.items);
      setError('');
    }, fail);
  }, [api, fail]);
  useEffect(reload, [reload]);
  return (
    <section aria-labelledby="tok-h">
      <h3 id="tok-h">API tokens</h3>
      {error ? <p role="alert">{error}</p> : null}
      <table>
        <caption className="sr-only">Your API tokens</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {tokens && tokens.length === 0 ? (
            <tr>
              <td colSpan={4}>No API tokens.</td>
            </tr>
          ) : null}
          {(tokens ?? []).map((t) => (
            <tr key={t.id}>
              <td>{t.name}</td>
              <td>{when(t.created_at)}</td>
              <td className="last-used">{when(t.last_used_at)}</td>
              <td>
                <button
                  type="button"
                  className="danger"
                  onClick={() => {
                    if (!confirm(`Revoke the token "${t.name}"? Programs using it stop working.`)) return;
                    api.delete(`/api/auth/tokens/${t.id}`).then(reload, fail);
                  }}
                >
                  Revoke <span className="sr-only">{t.name}</span>
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form
        className="grid-form"
        aria-label="new API token"
        onSubmit={(e) => {
          e.preventDefault();
          api.post<{ name: string; token: string }>('/api/auth/tokens', { name: name.trim() }).then((r) => {
            setCreated({ name: r.name, token: r.token });
            setCopied(false);
            setName('');
            reload();
          }, fail);
        }}
      >
        <label>
          Token name
          <input value={name} maxLength={100} onChange={(e) => setName(e.target.value)} required />
        </label>
        <button type="submit">Create token</button>
      </form>
      {created ? (
        <div className="token-once" role="status">
          <p>
            The token <strong>{created.name}</strong> — copy it now, it is not shown again:
          </p>
          <label>
            <span className="sr-only">New token</span>
            <input readOnly value={created.token} onFocus={(e) => e.target.select()} />
          </label>
          <button
            type="button"
            onClick={() => {
              void navigator.clipboard?.writeText(created.token).then(
                () => setCopied(true),
                () => undefined,
              );
            }}
          >
            {copied ? 'Copied' : 'Copy'}
          </button>
          <button type="button" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      ) : null}
    </section>
  );
}

/** An admin sets a new password for a user (every credential of that user ends). */
export function ResetPassword({
  api,
  user,
  onDone,
}: {
  api: Api;
  user: { id: string; email: string };
  onDone: () => void;
}) {
  const [open, setOpen] = useState(false);
  const [password, setPassword] = useState('');
  const [message, setMessage] = useState('');
  if (!open)
    return (
      <>
        <button type="button" onClick={() => setOpen(true)}>
          Reset password <span className="sr-only">of {user.email}</span>
        </button>
        {message ? <span role="status"> {message}</span> : null}
      </>
    );
  return (
    <form
      className="inline-form"
      aria-label={`reset ${user.email}`}
      onSubmit={(e) => {
        e.preventDefault();
        api.patch(`/api/admin/users/${user.id}`, { password }).then(
          () => {
            setOpen(false);
            setPassword('');
            setMessage(`Password of ${user.email} reset.`);
            onDone();
          },
          (err: unknown) => setMessage(errorText(err)),
        );
      }}
    >
      <label>
        New password for {user.email}
        <input
          type="password"
          autoComplete="new-password"
          minLength={8}
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          required
        />
      </label>
      <button type="submit">Set password</button>
      <button type="button" onClick={() => setOpen(false)}>
        Cancel
      </button>
      {message ? <p role="status">{message}</p> : null}
    </form>
  );
}
