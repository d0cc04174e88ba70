import { useCallback, useState } from 'react';
import type { BypassDto, BypassScope, InboxDto } from '@skald/contracts';
import { describeScope, describeSecs, expiryFromNow } from './scopes';
import { Diff } from './diff-view';
import { canEdit, EditCall } from './edit-call';
import './inbox.css';
import { usePolling } from './poll';
import type { Api } from './api';

/** Approvals and questions waiting across all the user's sessions; answered by REST. */
export function Inbox({ api }: { api: Api }) {
  const [inbox, setInbox] = useState<InboxDto | null>(null);
  const [error, setError] = useState('');
  const [notes, setNotes] = useState<Record<string, string>>({});
  const [bypasses, setBypasses] = useState<BypassDto[]>([]);
  const [categories, setCategories] = useState<Record<string, string>>({});
  /** The request whose call is being edited, and the refusal of its last edit. */
  const [editing, setEditing] = useState<{ id: string; error: string; busy: boolean } | null>(null);
  const load = useCallback(() => {
    api.get<{ items: Array<{ name: string; category: string }> }>('/api/approval/tools').then(
      (r) => setCategories(Object.fromEntries(r.items.map((t) => [t.name, t.category]))),
      () => undefined,
    );
    api.get<InboxDto>('/api/inbox').then(setInbox, (e: Error) => setError(e.message));
    api.get<{ items: BypassDto[] }>('/api/approval/bypasses').then(
      (r) => setBypasses(r.items),
      () => undefined,
    );
  }, [api]);
  usePolling(load, 3000);
  const act = (p: Promise<unknown>): void => void p.then(load, (e: Error) => setError(e.message));
  if (!inbox) return <main className="inbox">{error ? <p role="alert">{error}</p> : <p>Loading…</p>}</main>;
  return (
    <main className="inbox">
      <h2>Agent inbox</h2>
      <p className="decided-link">
        <a href="#approvals">My approvals</a>: what was decided about your agents' calls, and by whom
      </p>
      {error ? <p role="alert">{error}</p> : null}
      {inbox.approvals.length + inbox.clarifications.length === 0 ? <p>Nothing is waiting for you.</p> : null}
      <ul>
        {inbox.approvals.map((a) => (
          <li key={a.request_id} className="card approval">
            <h3>
              {a.tool_name} <small>({a.source})</small>
            </h3>
            <AskedIn item={a} />
            {a.rule ? <p className="why">Asked by the rule “{a.rule.name}”</p> : null}
            {a.context ? (
              <figure className="context">
                <figcaption>{a.agent?.name ?? 'The agent'} said before the call</figcaption>
                <blockquote>{a.context}</blockquote>
              </figure>
            ) : null}
            {a.lands_at && !a.preview ? (
              <p className="lands-at">
                lands at <code>{a.lands_at}</code>
              </p>
            ) : null}
            {a.preview ? (
              <>
                <p>
                  Write <code>{a.preview.path}</code>
                  {a.preview.old_content === undefined ? ' (a new file)' : ''}
                </p>
                {a.lands_at ? (
                  <p className="lands-at">
                    lands at <code>{a.lands_at}</code>
                  </p>
                ) : null}
                <Diff oldText={a.preview.old_content ?? ''} newText={a.preview.new_content} />
              </>
            ) : a.tool_name === 'execute_cmd' && typeof commandOf(a.arguments) === 'string' ? (
              <pre className="args" aria-label="command">
                $ {commandOf(a.arguments)}
              </pre>
            ) : (
              <pre className="args">{JSON.stringify(a.arguments, null, 2)}</pre>
            )}
            {editing?.id === a.request_id && canEdit(a.tool_name, a.arguments) ? (
              <EditCall
                id={a.request_id}
                toolName={a.tool_name}
                args={a.arguments}
                {...(a.preview ? { preview: { path: a.preview.path, oldContent: a.preview.old_content } } : {})}
                busy={editing.busy}
                error={editing.error}
                onCancel={() => setEditing(null)}
                onApprove={(edited) => {
                  setEditing({ id: a.request_id, error: '', busy: true });
                  api
                    .post(`/api/inbox/approvals/${a.request_id}/resolve`, { action: 'approve', arguments: edited })
                    .then(
                      () => (setEditing(null), load()),
                      (e: Error) => setEditing({ id: a.request_id, error: e.message, busy: false }),
                    );
                }}
              />
            ) : (
              <div className="actions">
                <button
                  type="button"
                  onClick={() => act(api.post(`/api/inbox/approvals/${a.request_id}/resolve`, { action: 'approve' }))}
                >
                  Approve
                </button>
                {canEdit(a.tool_name, a.arguments) ? (
                  <button type="button" onClick={() => setEditing({ id: a.request_id, error: '', busy: false })}>
                    Edit
                  </button>
                ) : null}
                {a.session_approval ? (
                  <button
                    type="button"
                    title={a.session_approval.scopes.map(describeScope).join('; ')}
                    onClick={() =>
                      act(
                        api.post(`/api/inbox/approvals/${a.request_id}/resolve`, {
                          action: 'approve',
                          bypass_scope: 'call',
                          bypass_secs: a.session_approval?.secs,
                        }),
                      )
                    }
                  >
                    Approve for this session ({describeSecs(a.session_approval.secs)}
                    {a.session_approval.secs > 0 ? `, until ${expiryFromNow(a.session_approval.secs)}` : ''}):{' '}
                    {a.session_approval.scopes.map(describeScope).join('; ')}
                  </button>
                ) : null}
                <WiderApproval
                  category={categories[a.tool_name]}
                  onApprove={(scope) =>
                    act(
                      api.post(`/api/inbox/approvals/${a.request_id}/resolve`, {
                        action: 'approve',
                        bypass_scope: scope,
                        bypass_secs: a.session_approval?.secs ?? 3600,
                      }),
                    )
                  }
                />
                <label className="note">
                  <span>Note</span>
                  <input
                    value={notes[a.request_id] ?? ''}
                    onChange={(e) => setNotes({ ...notes, [a.request_id]: e.target.value })}
                  />
                </label>
                <button
                  type="button"
                  className="danger"
                  onClick={() =>
                    act(
                      api.post(`/api/inbox/approvals/${a.request_id}/resolve`, {
                        action: 'reject',
                        ...(notes[a.request_id] ? { note: notes[a.request_id] } : {}),
                      }),
                    )
                  }
                >
                  Reject
                </button>
              </div>
            )}
          </li>
        ))}
        {inbox.clarifications.map((c) => (
          <li key={c.request_id} className="card question">
            <h3>{c.title}</h3>
            <AskedIn item={c} />
            <p>{c.question}</p>
            <div className="suggested">
              {c.suggested_answers.map((s) => (
                <button
                  type="button"
                  key={s}
                  onClick={() => act(api.post(`/api/inbox/clarifications/${c.request_id}/resolve`, { answer: s }))}
                >
                  {s}
                </button>
              ))}
            </div>
            <FreeAnswer
              label={`Your answer to ${c.title}`}
              onAnswer={(answer) => act(api.post(`/api/inbox/clarifications/${c.request_id}/resolve`, { answer }))}
            />
          </li>
        ))}
      </ul>
      <h2>Session bypasses</h2>
      {bypasses.length === 0 ? <p>No session runs without asking.</p> : null}
      <ul>
        {bypasses.map((b) => (
          <li key={b.id} className="card">
            <p>
              Session <a href={`#session/${b.session_id}`}>{b.session_id.slice(0, 8)}</a>: {describeScope(b.scope)}
              {b.expires_at ? ` until ${new Date(b.expires_at).toLocaleTimeString()}` : ' for the whole session'}
            </p>
            <button type="button" className="danger" onClick={() => act(api.delete(`/api/approval/bypasses/${b.id}`))}>
              Revoke
            </button>
          </li>
        ))}
      </ul>
    </main>
  );
}

/**
 * A wider session approval is a deliberate choice: behind a disclosure, each option spelled out,
 * and a second click to confirm.
 */
function WiderApproval({ category, onApprove }: { category?: string; onApprove: (scope: BypassScope) => void }) {
  const [picked, setPicked] = useState<number | null>(null);
  const options: BypassScope[] = [...(category && category !== 'dynamic' ? [{ category }] : []), 'all'];
  const chosen = picked === null ? null : (options[picked] ?? null);
  return (
    <details className="wider">
      <summary>Wider session approval…</summary>
      {options.map((scope, i) => (
        <label key={JSON.stringify(scope)}>
          <input type="radio" checked={picked === i} onChange={() => setPicked(i)} />
          {describeScope(scope)} in this session, without asking (a Deny still holds)
        </label>
      ))}
      <button type="button" className="danger" disabled={chosen === null} onClick={() => chosen && onApprove(chosen)}>
        Approve {chosen ? describeScope(chosen) : '…'} for this session
      </button>
    </details>
  );
}

/** Any question can be answered in words, with or without suggested answers. */
function FreeAnswer({ label, onAnswer }: { label: string; onAnswer: (answer: string) => void }) {
  const [text, setText] = useState('');
  return (
    <form
      className="free-answer"
      onSubmit={(e) => {
        e.preventDefault();
        if (!text.trim()) return;
        onAnswer(text.trim());
        setText('');
      }}
    >
      <label>
        <span className="sr-only">{label}</span>
        <input value={text} onChange={(e) => setText(e.target.value)} placeholder="Your answer" required />
      </label>
      <button type="submit">Answer</button>
    </form>
  );
}

function commandOf(args: unknown): string | undefined {
  const c = args && typeof args === 'object' ? (args as { command?: unknown }).command : undefined;
  return typeof c === 'string' ? c : undefined;
}

/** When the agent asked, which agent, and the conversation it asked in (a link to its rows). */
function AskedIn({ item }: { item: InboxDto['approvals'][number] | InboxDto['clarifications'][number] }) {
  const title = item.session_title?.trim();
  return (
    <p className="asked">
      Asked <time dateTime={item.created_at}>{new Date(item.created_at).toLocaleString()}</time>
      {item.agent ? (
        <>
          {' '}
          by <span className="asked-agent">{item.agent.name}</span>
        </>
      ) : null}{' '}
      in{' '}
      <a href={`#session/${item.session_id}`} className="conversation">
        {title ? title : 'an untitled conversation'}
      </a>
    </p>
  );
}
