import { useCallback, useState } from 'react';
import type { AuditItem } from '@skald/contracts';
import type { Api } from '../api';
import { useLoad, type AdminUser, type KnownTool } from '../admin-load';

const DECISIONS: ReadonlyArray<AuditItem['decision']> = ['allow', 'deny', 'require', 'approve', 'reject', 'answer'];
const AUDIT_PAGE = 50;

interface AuditFilters {
  user_id: string;
  tool: string;
  decision: string;
  since: string;
  until: string;
}
const NO_FILTERS: AuditFilters = { user_id: '', tool: '', decision: '', since: '', until: '' };

/** The audit's query: the filters set (a local date-time as the instant it names), the page's cursor. */
function auditQuery(f: AuditFilters, before: string | undefined): string {
  const q = new URLSearchParams({ limit: String(AUDIT_PAGE) });
  if (f.user_id) q.set('user_id', f.user_id);
  if (f.tool.trim()) q.set('tool', f.tool.trim());
  if (f.decision) q.set('decision', f.decision);
  if (f.since) q.set('since', new Date(f.since).toISOString());
  if (f.until) q.set('until', new Date(f.until).toISOString());
  if (before) q.set('before', before);
  return q.toString();
}

/**
 * Whose decisions an audit log shows: `everyone`'s (Admin → Audit, with a user filter) or the
 * viewer's own (My approvals: the decisions on calls of their conversations, the server's scope).
 */
export type AuditScope = 'everyone' | 'mine';

const CAPTIONS: Record<AuditScope, string> = {
  everyone: 'Audit: every decision, automatic or human, newest first',
  mine: 'Decisions on the tool calls of your conversations, automatic or human, newest first',
};

/** The user's own decided approvals: the audit log in their scope, each row linking to its conversation. */
export function MyApprovals({ api }: { api: Api }) {
  return (
    <main className="my-approvals">
      <h2>My approvals</h2>
      <p>
        What was decided about your agents' tool calls, and by whom: a rule, a session approval, or a person.{' '}
        <a href="#inbox">What is waiting for you</a> is in the inbox.
      </p>
      <AuditLog api={api} scope="mine" />
    </main>
  );
}

/** An audit log: decisions filtered on the server by tool, decision and time (and user, for everyone's), paged by `before`. */
export function AuditLog({ api, scope }: { api: Api; scope: AuditScope }) {
  const [draft, setDraft] = useState<AuditFilters>(NO_FILTERS);
  const [filters, setFilters] = useState<AuditFilters>(NO_FILTERS);
  // the cursors of the pages walked so far: the last is the one shown (undefined: the newest)
  const [cursors, setCursors] = useState<Array<string | undefined>>([undefined]);
  const before = cursors[cursors.length - 1];
  const [audit, error] = useLoad(
    useCallback(
      () => api.get<{ items: AuditItem[]; has_more: boolean }>(`/api/approval/audit?${auditQuery(filters, before)}`),
      [api, filters, before],
    ),
  );
  // the human who answered and whose session it was, by email (the audit records their ids): an admin's list
  const [users] = useLoad(
    useCallback(
      () =>
        scope === 'everyone'
          ? api.get<{ items: AdminUser[] }>('/api/admin/users')
          : Promise.resolve({ items: [] as AdminUser[] }),
      [api, scope],
    ),
  );
  const [tools] = useLoad(useCallback(() => api.get<{ items: KnownTool[] }>('/api/approval/tools'), [api]));
  const emails = new Map((users?.items ?? []).map((u) => [u.id, u.email]));
  const me = api.auth.user.id;
  const set = (k: keyof AuditFilters) => (e: { target: { value: string } }) =>
    setDraft({ ...draft, [k]: e.target.value });
  return (
    <section aria-label="audit log">
      <form
        className="grid-form audit-filters"
        aria-label="audit filters"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(draft);
          setCursors([undefined]);
        }}
      >
        {scope === 'everyone' ? (
          <label>
            User
            <select value={draft.user_id} onChange={set('user_id')}>
              <option value="">every user</option>
              {(users?.items ?? []).map((u) => (
                <option key={u.id} value={u.id}>
                  {u.email}
                </option>
              ))}
            </select>
          </label>
        ) : null}
        <label>
          Tool
          <input value={draft.tool} onChange={set('tool')} list="audit-tools" placeholder="any tool" />
        </label>
        <datalist id="audit-tools">
          {(tools?.items ?? []).map((t) => (
            <option key={t.name} value={t.name} />
          ))}
        </datalist>
        <label>
          Decision
          <select value={draft.decision} onChange={set('decision')}>
            <option value="">any decision</option>
            {DECISIONS.map((d) => (
              <option key={d} value={d}>
                {d}
              </option>
            ))}
          </select>
        </label>
        <label>
          From
          <input type="datetime-local" value={draft.since} onChange={set('since')} />
        </label>
        <label>
          Until
          <input type="datetime-local" value={draft.until} onChange={set('until')} />
        </label>
        <div className="actions">
          <button type="submit">Filter</button>
          <button
            type="button"
            className="secondary"
            onClick={() => {
              setDraft(NO_FILTERS);
              setFilters(NO_FILTERS);
              setCursors([undefined]);
            }}
          >
            Clear
          </button>
        </div>
      </form>
      {error ? <p role="alert">{error}</p> : null}
      <table className="audit">
        <caption>{CAPTIONS[scope]}</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Conversation</th>
            <th scope="col">Tool</th>
            <th scope="col">Decision</th>
            <th scope="col">By</th>
            <th scope="col">Note</th>
          </tr>
        </thead>
        <tbody>
          {(audit?.items ?? []).map((a) => (
            <tr key={a.id}>
              <td data-label="When">
                <time dateTime={a.at}>{new Date(a.at).toLocaleString()}</time>
              </td>
              <td data-label="Conversation">
                <Conversation item={a} me={me} owner={emails.get(a.user_id)} />
              </td>
              <td data-label="Tool">{a.tool_name}</td>
              <td data-label="Decision">{a.decision}</td>
              <td data-label="By">{decidedBy(a, emails, me)}</td>
              <td data-label="Note">{a.note ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {audit && audit.items.length === 0 ? <p>No decision matches these filters.</p> : null}
      <div className="actions">
        <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors(cursors.slice(0, -1))}>
          Newer
        </button>
        <button
          type="button"
          disabled={!audit?.has_more}
          onClick={() => audit && setCursors([...cursors, audit.items[audit.items.length - 1]?.id])}
        >
          Older
        </button>
      </div>
    </section>
  );
}

/**
 * The conversation a decision was about, by its title: the viewer's own links to its session view,
 * another user's to the read-only view of it, with whose it is.
 */
function Conversation({ item, me, owner }: { item: AuditItem; me: string; owner: string | undefined }) {
  if (!item.session_id) return <>—</>;
  const title = item.session_title?.trim() || 'an untitled conversation';
  if (item.user_id === me) return <a href={`#session/${item.session_id}`}>{title}</a>;
  return (
    <>
      <a href={`#admin/session/${item.session_id}`}>{title}</a> <small>({owner ?? 'another user'})</small>
    </>
  );
}

/** Who decided: the human and where, the rule by its name, or the gate's other grounds. */
function decidedBy(a: AuditItem, emails: ReadonlyMap<string, string>, me: string): string {
  if (a.by === 'human') return humanBy(a, emails, me);
  if (a.rule_name) return `${a.by === 'policy' ? 'built-in rule' : 'rule'} “${a.rule_name}”`;
  return BY[a.by];
}

const BY: Record<AuditItem['by'], string> = {
  rule: 'a rule',
  bypass: 'a session approval',
  run_context: "the session's allowed paths",
  human: 'a human',
  auto_deny: 'no one to ask (refused)',
  policy: 'the gate',
};

const CHANNELS: Record<NonNullable<AuditItem['channel']>, string> = {
  card: 'the chat card',
  inbox: 'the inbox',
  cli: 'the CLI',
  push: 'a notification',
  api: 'the API',
};

/**
 * "ann@example.com in the inbox", "you in the chat card": who answered and where, for an audit row of
 * a human's answer (someone else on the viewer's own call: an administrator).
 */
function humanBy(a: AuditItem, emails: ReadonlyMap<string, string>, me: string): string {
  const who = !a.actor_user_id
    ? 'a human'
    : a.actor_user_id === me
      ? 'you'
      : (emails.get(a.actor_user_id) ?? (a.user_id === me ? 'an administrator' : a.actor_user_id));
  return a.channel ? `${who} in ${CHANNELS[a.channel]}` : who;
}
