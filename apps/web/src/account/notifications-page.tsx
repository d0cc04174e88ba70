import { useCallback, useEffect, useState } from 'react';
import type { DeliveryDto, NotificationKind, NotificationSettings, WebhookCreated, WebhookDto } from '@skald/contracts';
import { errorText, type Api } from '../api';
import { failedInARow } from '@skald/contracts/notify-kinds';
import { PushDevice } from '../notifications/push-device';
import { channelLabel, CHANNELS, isOn, kindLabel, KINDS, timeZones, toggled } from './notification-matrix';
import './notifications-page.css';

const when = (iso: string | null): string => (iso ? new Date(iso).toLocaleString() : '—');
const ownZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
/** A server's reason as a sentence: capitalised, ending with a full stop. */
const sentence = (s: string): string => {
  const t = s.trim();
  return `${t.charAt(0).toUpperCase()}${t.slice(1)}${/[.!?]$/.test(t) ? '' : '.'}`;
};

/**
 * `#notifications`: what reaches the caller away from the chat — which kinds go to which channel,
 * quiet hours, their webhooks with each one's delivery log — and, on this device, push.
 */
export function NotificationsPage({ api }: { api: Api }) {
  return (
    <main className="notifications-page">
      <h2>Notifications</h2>
      <p className="muted">
        What reaches you when you are not looking at the chat. <a href="#account">Back to the account</a>
      </p>
      <Settings api={api} />
      <PushDevice api={api} />
      <Webhooks api={api} />
    </main>
  );
}

function Settings({ api }: { api: Api }) {
  const [settings, setSettings] = useState<NotificationSettings | null>(null);
  const [error, setError] = useState('');
  const [status, setStatus] = useState('');
  const [dirty, setDirty] = useState(false);
  useEffect(() => {
    api
      .get<NotificationSettings>('/api/notifications/settings')
      .then(setSettings, (e: unknown) => setError(errorText(e)));
  }, [api]);
  if (!settings)
    return (
      <section aria-labelledby="kinds-h">
        <h3 id="kinds-h">What reaches you where</h3>
        {error ? <p role="alert">{error}</p> : <p className="muted">Loading…</p>}
      </section>
    );
  const change = (next: NotificationSettings) => {
    setSettings(next);
    setDirty(true);
    setStatus('');
  };
  const quiet = settings.quiet_hours;
  return (
    <form
      aria-label="notification settings"
      onSubmit={(e) => {
        e.preventDefault();
        setError('');
        api.put<NotificationSettings>('/api/notifications/settings', settings).then(
          (saved) => {
            setSettings(saved);
            setDirty(false);
            setStatus('Saved.');
          },
          (err: unknown) => setError(errorText(err)),
        );
      }}
    >
      <section aria-labelledby="kinds-h">
        <h3 id="kinds-h">What reaches you where</h3>
        {/* Scrolls sideways on a narrow screen; focusable so a keyboard can scroll it too. */}
        <div className="matrix-wrap" role="region" aria-label="notification matrix" tabIndex={0}>
          <table className="matrix">
            <caption className="sr-only">Which notifications go to which channel</caption>
            <thead>
              <tr>
                <th scope="col">Notification</th>
                {CHANNELS.map((c) => (
                  <th scope="col" key={c}>
                    {channelLabel(c)}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {KINDS.map((k) => (
                <tr key={k}>
                  <th scope="row">{kindLabel(k)}</th>
                  {CHANNELS.map((c) => (
                    <td key={c}>
                      <input
                        type="checkbox"
                        aria-label={`${kindLabel(k)} by ${channelLabel(c)}`}
                        checked={isOn(settings, c, k)}
                        onChange={() => change(toggled(settings, c, k))}
                      />
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <p className="muted">
          E-mail goes to {api.auth.user.email} when the operator has set up a mail server. Your webhooks receive the
          kinds ticked in the Webhook column.
        </p>
      </section>
      <section aria-labelledby="quiet-h">
        <h3 id="quiet-h">Quiet hours</h3>
        <label className="check">
          <input
            type="checkbox"
            checked={quiet !== null}
            onChange={(e) =>
              change({
                ...settings,
                quiet_hours: e.target.checked ? { start: '22:00', end: '07:00', time_zone: ownZone() } : null,
              })
            }
          />
          Hold e-mail and push during quiet hours (webhooks are never held)
        </label>
        {quiet ? (
          <div className="quiet">
            <label>
              From
              <input
                type="time"
                required
                value={quiet.start}
                onChange={(e) => change({ ...settings, quiet_hours: { ...quiet, start: e.target.value } })}
              />
            </label>
            <label>
              Until
              <input
                type="time"
                required
                value={quiet.end}
                onChange={(e) => change({ ...settings, quiet_hours: { ...quiet, end: e.target.value } })}
              />
            </label>
            <label>
              Time zone
              <select
                value={quiet.time_zone}
                onChange={(e) => change({ ...settings, quiet_hours: { ...quiet, time_zone: e.target.value } })}
              >
                {timeZones(quiet.time_zone).map((z) => (
                  <option key={z}>{z}</option>
                ))}
              </select>
            </label>
          </div>
        ) : null}
      </section>
      {error ? <p role="alert">{error}</p> : null}
      <div className="save-row">
        <button type="submit" disabled={!dirty}>
          Save notification settings
        </button>
        <span role="status">{status}</span>
      </div>
    </form>
  );
}

function Webhooks({ api }: { api: Api }) {
  const admin = api.auth.user.role === 'admin';
  const [hooks, setHooks] = useState<WebhookDto[] | null>(null);
  const [error, setError] = useState('');
  const [url, setUrl] = useState('');
  const [everyone, setEveryone] = useState(false);
  const [kinds, setKinds] = useState<NotificationKind[]>([...KINDS]);
  const [created, setCreated] = useState<WebhookCreated | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const fail = useCallback((e: unknown) => setError(errorText(e)), []);
  const reload = useCallback(() => {
    api.get<{ items: WebhookDto[] }>('/api/notifications/webhooks').then((r) => {
      setHooks(r.items);
      setError('');
    }, fail);
  }, [api, fail]);
  useEffect(reload, [reload]);
  return (
    <section aria-labelledby="hooks-h">
      <h3 id="hooks-h">Webhooks</h3>
      {error ? <p role="alert">{error}</p> : null}
      {hooks && hooks.length === 0 ? <p className="muted">No webhooks.</p> : null}
      <ul className="hooks">
        {(hooks ?? []).map((h) => (
          <li key={h.id} className="hook">
            <div className="hook-head">
              <code className="hook-url">{h.url}</code>
              <span className={h.enabled ? 'hook-state' : 'hook-state off'}>
                {h.enabled ? 'On' : 'Disabled'}
                {h.scope === 'admin' ? ' · every user' : ''}
              </span>
            </div>
            {!h.enabled ? (
              <p className="hook-disabled" role="note">
                {sentence(h.disabled_reason ?? 'disabled')} Add it again once its receiver works.
              </p>
            ) : h.consecutive_failures > 0 ? (
              <p className="muted">{sentence(failedInARow(h.consecutive_failures))}</p>
            ) : null}
            {h.kinds ? <p className="muted">Kinds: {h.kinds.map(kindLabel).join(', ')}</p> : null}
            <div className="hook-actions">
              <button
                type="button"
                className="secondary"
                aria-expanded={open === h.id}
                onClick={() => setOpen(open === h.id ? null : h.id)}
              >
                Delivery log <span className="sr-only">of {h.url}</span>
              </button>
              <button
                type="button"
                className="danger"
                onClick={() => {
                  if (!confirm(`Delete the webhook ${h.url} and its delivery log?`)) return;
                  api.delete(`/api/notifications/webhooks/${h.id}`).then(reload, fail);
                }}
              >
                Delete <span className="sr-only">{h.url}</span>
              </button>
            </div>
            {open === h.id ? <DeliveryLog api={api} hook={h} /> : null}
          </li>
        ))}
      </ul>
      <form
        className="grid-form"
        aria-label="new webhook"
        onSubmit={(e) => {
          e.preventDefault();
          const body = everyone ? { url: url.trim(), scope: 'admin', kinds } : { url: url.trim() };
          api.post<WebhookCreated>('/api/notifications/webhooks', body).then((r) => {
            setCreated(r);
            setUrl('');
            reload();
          }, fail);
        }}
      >
        <label>
          Webhook URL
          <input
            type="url"
            inputMode="url"
            placeholder="https://example.com/skald"
            value={url}
            maxLength={2048}
            onChange={(e) => setUrl(e.target.value)}
            required
          />
        </label>
        {admin ? (
          <fieldset className="hook-kinds">
            <legend>Admin webhook</legend>
            <label className="check">
              <input type="checkbox" checked={everyone} onChange={(e) => setEveryone(e.target.checked)} />
              Every user&apos;s events
            </label>
            {everyone
              ? KINDS.map((k) => (
                  <label className="check" key={k}>
                    <input
                      type="checkbox"
                      checked={kinds.includes(k)}
                      onChange={() =>
                        setKinds(
                          kinds.includes(k)
                            ? kinds.filter((x) => x !== k)
                            : KINDS.filter((x) => x === k || kinds.includes(x)),
                        )
                      }
                    />
                    {kindLabel(k)}
                  </label>
                ))
              : null}
          </fieldset>
        ) : null}
        <button type="submit">Add webhook</button>
      </form>
      {created ? (
        <div className="token-once" role="status">
          <p>
            The signing secret of <code>{created.webhook.url}</code> — copy it now, it is not shown again. Verify each
            delivery with it (Standard Webhooks).
          </p>
          <label>
            <span className="sr-only">Signing secret</span>
            <input readOnly value={created.secret} onFocus={(e) => e.target.select()} />
          </label>
          <button
            type="button"
            onClick={() => void navigator.clipboard?.writeText(created.secret).catch(() => undefined)}
          >
            Copy
          </button>
          <button type="button" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      ) : null}
    </section>
  );
}

function DeliveryLog({ api, hook }: { api: Api; hook: WebhookDto }) {
  const [items, setItems] = useState<DeliveryDto[] | null>(null);
  const [error, setError] = useState('');
  const load = useCallback(() => {
    api.get<{ items: DeliveryDto[] }>(`/api/notifications/webhooks/${hook.id}/deliveries`).then(
      (r) => setItems(r.items),
      (e: unknown) => setError(errorText(e)),
    );
  }, [api, hook.id]);
  useEffect(load, [load]);
  return (
    <div className="delivery-log">
      {error ? <p role="alert">{error}</p> : null}
      <div className="log-head">
        <strong>Latest deliveries</strong>
        <button type="button" className="secondary" onClick={load}>
          Refresh <span className="sr-only">the deliveries to {hook.url}</span>
        </button>
      </div>
      <div className="matrix-wrap" role="region" aria-label={`deliveries to ${hook.url}`} tabIndex={0}>
        <table>
          <caption className="sr-only">Latest deliveries to {hook.url}</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">What</th>
              <th scope="col">Status</th>
              <th scope="col">Attempts</th>
              <th scope="col">Answer</th>
            </tr>
          </thead>
          <tbody>
            {items && items.length === 0 ? (
              <tr>
                <td colSpan={5}>Nothing delivered yet.</td>
              </tr>
            ) : null}
            {(items ?? []).map((d) => (
              <tr key={d.id}>
                <td>{when(d.created_at)}</td>
                <td>{kindLabel(d.kind)}</td>
                <td className={`delivery-${d.status}`}>
                  {d.status}
                  {d.status === 'pending' && d.next_attempt_at ? ` (next ${when(d.next_attempt_at)})` : ''}
                </td>
                <td>{d.attempts}</td>
                <td>
                  {d.response_code ?? ''}
                  {d.last_error ? <span className="muted"> {d.last_error}</span> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
