import { useCallback, useState } from 'react';
import type { UsageExportBy, UsageReport } from '@skald/contracts';
import { errorText, type Api } from '../api';
import { useLoad } from '../admin-load';
import { UsageChart } from './usage-chart';
import './usage.css';

const DAY_MS = 86_400_000;
const dayOf = (t: number): string => new Date(t).toISOString().slice(0, 10);
const num = new Intl.NumberFormat();
const pct = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 1 });
const usd = (n: number | null): string => (n === null ? '—' : `$${n.toFixed(n < 1 ? 4 : 2)}`);

/** `[from, until)` of the last `n` days, today included (UTC). */
function lastDays(n: number, now = Date.now()): { from: string; until: string } {
  const until = Date.parse(`${dayOf(now)}T00:00:00Z`) + DAY_MS;
  return { from: dayOf(until - n * DAY_MS), until: dayOf(until) };
}

const PRESETS = [7, 30, 90, 365] as const;

/**
 * Saves a CSV export made with the caller's token (an `<a href>` cannot send the Authorization
 * header): fetched as a blob, handed to the browser under the server's file name.
 */
async function download(api: Api, query: string): Promise<void> {
  const res = await fetch(`/api/admin/usage/export?${query}`, {
    headers: { authorization: `Bearer ${api.auth.token}` },
  });
  if (!res.ok) throw new Error(`export failed (${res.status})`);
  const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? 'usage.csv';
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/**
 * LLM usage over a range of UTC days: the caller's own (`mine`), or every user's with the top
 * users and CSV exports (`everyone`, admins). The chart has the per-day table as its text form.
 */
export function UsageView({ api, scope }: { api: Api; scope: 'mine' | 'everyone' }) {
  const [range, setRange] = useState(() => lastDays(30));
  const [draft, setDraft] = useState(range);
  const [exportError, setExportError] = useState('');
  const query = `from=${range.from}&until=${range.until}`;
  const [report, error] = useLoad(
    useCallback(
      () => api.get<UsageReport>(scope === 'mine' ? `/api/llm/usage?${query}` : `/api/admin/usage?${query}&top=10`),
      [api, scope, query],
    ),
  );
  return (
    <section aria-labelledby="usage-h" className="usage">
      <h3 id="usage-h">{scope === 'mine' ? 'Your usage' : 'Usage of every user'}</h3>
      <form
        className="usage-range"
        aria-label="usage range"
        onSubmit={(e) => {
          e.preventDefault();
          setRange(draft);
        }}
      >
        <label>
          From
          <input
            type="date"
            value={draft.from}
            onChange={(e) => setDraft({ ...draft, from: e.target.value })}
            required
          />
        </label>
        <label>
          Until (not included)
          <input
            type="date"
            value={draft.until}
            onChange={(e) => setDraft({ ...draft, until: e.target.value })}
            required
          />
        </label>
        <button type="submit">Show</button>
        <span className="usage-presets">
          {PRESETS.map((n) => (
            <button
              key={n}
              type="button"
              onClick={() => {
                const r = lastDays(n);
                setDraft(r);
                setRange(r);
              }}
            >
              {n} days
            </button>
          ))}
        </span>
      </form>
      {error ? <p role="alert">{error}</p> : null}
      {report ? <Report report={report} /> : error ? null : <p>Loading…</p>}
      {scope === 'everyone' ? (
        <p className="usage-exports">
          Download as CSV:{' '}
          {(['day', 'model', 'user', 'group', 'failure'] as UsageExportBy[]).map((by) => (
            <button
              key={by}
              type="button"
              onClick={() => {
                setExportError('');
                download(api, `${query}&by=${by}`).catch((e: unknown) => setExportError(errorText(e)));
              }}
            >
              per {by}
            </button>
          ))}
          {exportError ? <span role="alert">{exportError}</span> : null}
        </p>
      ) : null}
    </section>
  );
}

function Report({ report }: { report: UsageReport }) {
  const t = report.totals;
  return (
    <>
      <dl className="usage-totals" aria-label="totals">
        <div>
          <dt>Calls</dt>
          <dd>{num.format(t.calls)}</dd>
        </div>
        <div>
          <dt>Input tokens</dt>
          <dd>{num.format(t.input_tokens)}</dd>
        </div>
        <div>
          <dt>Output tokens</dt>
          <dd>{num.format(t.output_tokens)}</dd>
        </div>
        <div>
          <dt>Cost</dt>
          <dd>{usd(t.cost_usd)}</dd>
        </div>
        <div>
          <dt>Failed calls</dt>
          <dd>{num.format(t.failed_calls)}</dd>
        </div>
      </dl>
      <figure className="usage-figure">
        <figcaption>Tokens and cost per day (UTC); the table below has the same numbers</figcaption>
        <UsageChart days={report.days} />
      </figure>
      <details>
        <summary>Per day (table)</summary>
        <Table
          caption="Per day"
          head={['Day', 'Calls', 'Input tokens', 'Output tokens', 'Cost', 'Failed']}
          rows={report.days.map((d) => [
            d.day,
            num.format(d.calls),
            num.format(d.input_tokens),
            num.format(d.output_tokens),
            usd(d.cost_usd),
            num.format(d.failed_calls),
          ])}
        />
      </details>
      <Table
        caption="Per client and model"
        head={['Client', 'Model', 'Calls', 'Input tokens', 'Output tokens', 'Cost', 'Failed']}
        rows={report.models.map((m) => [
          m.client,
          m.model,
          num.format(m.calls),
          num.format(m.input_tokens),
          num.format(m.output_tokens),
          usd(m.cost_usd),
          num.format(m.failed_calls),
        ])}
      />
      {report.user_id === null ? <GroupsTable report={report} /> : null}
      {report.user_id === null ? (
        <Table
          caption="Top users by tokens"
          head={['User', 'Calls', 'Tokens', 'Cost']}
          rows={report.top_users.map((u) => [
            u.email ?? u.user_id,
            num.format(u.calls),
            num.format(u.input_tokens + u.output_tokens),
            usd(u.cost_usd),
          ])}
        />
      ) : null}
      <Table
        caption="Failed calls"
        head={['Day', 'Client', 'Model', 'Kind', 'Calls']}
        rows={report.failures.map((f) => [f.day, f.client, f.model, f.error_kind, num.format(f.calls)])}
      />
    </>
  );
}

/**
 * Usage per group (every user's report): by current membership, so a user in several groups counts
 * in each and the shares may add up to more than 100 %; the users in no group have their own row.
 */
function GroupsTable({ report }: { report: UsageReport }) {
  const all = report.totals.input_tokens + report.totals.output_tokens;
  const share = (tokens: number): string => (all > 0 ? pct.format(tokens / all) : '—');
  return (
    <>
      <Table
        caption="Per group (current members)"
        head={['Group', 'Users', 'Calls', 'Input tokens', 'Output tokens', 'Cost', 'Share of tokens']}
        rows={report.groups.map((g) => [
          g.name ?? '(no group)',
          num.format(g.users),
          num.format(g.calls),
          num.format(g.input_tokens),
          num.format(g.output_tokens),
          usd(g.cost_usd),
          share(g.input_tokens + g.output_tokens),
        ])}
      />
      <p className="usage-note">
        A user in several groups counts in each, so the shares may add up to more than 100 %.
      </p>
    </>
  );
}

/** A table that scrolls sideways on a narrow screen (focusable, so a keyboard can scroll it). */
function Table({ caption, head, rows }: { caption: string; head: string[]; rows: string[][] }) {
  return (
    <div className="usage-table" tabIndex={0} role="region" aria-label={caption}>
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {head.map((h) => (
              <th key={h} scope="col">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 ? (
            <tr>
              <td colSpan={head.length}>None in this range.</td>
            </tr>
          ) : (
            rows.map((r, i) => (
              <tr key={i}>
                {r.map((c, j) => (
                  <td key={j}>{c}</td>
                ))}
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}
