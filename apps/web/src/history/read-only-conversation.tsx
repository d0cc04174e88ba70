import { useCallback, useEffect, useMemo, useState } from 'react';
import type { AdminSessionDto, ChatMessages } from '@skald/contracts';
import { ApiError, errorText, type Api } from '../api';
import { ApprovalCard, Markdown, ToolCard } from '../cards';
import type { Item } from '../chat-items';
import { HISTORY_PAGE, historyItems, mergeItems } from './history-items';
import './read-only.css';

/** What a refused view says: who may see it, or that it does not exist. */
function refusal(e: unknown): string {
  if (e instanceof ApiError && e.status === 403 && e.message === 'admin only')
    return "Only an admin can view another user's conversation.";
  if (e instanceof ApiError && e.status === 404) return 'This conversation does not exist (or it was deleted).';
  return errorText(e);
}

/**
 * `#admin/session/{id}`: another user's conversation as an admin reads it — the chat's history
 * rendering with no composer, no approval buttons and no edit or regenerate controls. Every read
 * is recorded by the server.
 */
export function ReadOnlyConversation({ api, id }: { api: Api; id: string }) {
  const base = `/api/admin/sessions/${encodeURIComponent(id)}`;
  const [session, setSession] = useState<AdminSessionDto | null>(null);
  const [items, setItems] = useState<Item[]>([]);
  const [older, setOlder] = useState<string | null>(null);
  const [error, setError] = useState('');
  const [loading, setLoading] = useState(false);

  const load = useCallback(
    async (before: string | null) => {
      const q = new URLSearchParams({ limit: String(HISTORY_PAGE) });
      if (before) q.set('before', before);
      const page = await api.get<ChatMessages>(`${base}/messages?${q.toString()}`);
      const shown = historyItems(page.items);
      setItems((now) => (before ? mergeItems(shown, now) : shown));
      setOlder(page.has_more ? (page.items[0]?.id ?? null) : null);
    },
    [api, base],
  );
  useEffect(() => {
    setError('');
    api.get<AdminSessionDto>(base).then(
      (s) => {
        setSession(s);
        return load(null).catch((e: unknown) => setError(refusal(e)));
      },
      (e: unknown) => setError(refusal(e)),
    );
  }, [api, base, load]);

  const owner = session ? (session.owner.email ?? 'a deleted user') : '';
  const named = useMemo(
    () => new Map(session ? [[session.owner.id, session.owner.email ?? 'its owner']] : []),
    [session],
  );
  return (
    <main className="chat read-only-view">
      <p>
        {api.auth.user.role === 'admin' ? (
          <a href="#admin/audit">Back to the audit</a>
        ) : (
          <a href="#chat">Back to the chat</a>
        )}
      </p>
      {error ? (
        <p role="alert">{error}</p>
      ) : session ? (
        <>
          <p className="read-only-banner" role="note">
            Viewing {owner}&rsquo;s conversation (read only)
          </p>
          <h2>{session.title?.trim() || 'Untitled conversation'}</h2>
        </>
      ) : (
        <p role="status">Loading…</p>
      )}
      {older ? (
        <button
          type="button"
          className="link load-older"
          disabled={loading}
          onClick={() => {
            setLoading(true);
            load(older)
              .catch((e: unknown) => setError(refusal(e)))
              .finally(() => setLoading(false));
          }}
        >
          {loading ? 'Loading earlier messages…' : 'Load earlier messages'}
        </button>
      ) : null}
      <ol className="timeline" aria-label={`${owner}'s messages`}>
        {items.map((i) => (
          <li key={i.key} className={`item ${i.kind}`}>
            <ReadOnlyItem item={i} me={api.auth.user.id} named={named} />
          </li>
        ))}
      </ol>
      {session && !error && items.length === 0 ? <p>No messages yet.</p> : null}
    </main>
  );
}

/** One history item, shown as the chat shows it, without anything that acts. */
function ReadOnlyItem({ item: i, me, named }: { item: Item; me: string; named: ReadonlyMap<string, string> }) {
  switch (i.kind) {
    case 'user':
      return (
        <div className="user-line">
          <div className="bubble user-bubble">
            {i.content}
            {i.attachments?.length ? (
              <ul className="chips" aria-label="attached files">
                {i.attachments.map((a) => (
                  <li key={a.path} className="chip">
                    {a.name}
                  </li>
                ))}
              </ul>
            ) : null}
          </div>
        </div>
      );
    case 'assistant':
      return (
        <div className="bubble assistant-bubble">
          <Markdown text={i.content} />
        </div>
      );
    case 'tool':
      return <ToolCard tool={i} />;
    case 'approval':
      return <ApprovalCard card={i} on={null} me={me} named={named} />;
    case 'file':
      return <p className="file-event">{i.path}</p>;
    case 'question':
      return <p>{i.question}</p>;
    case 'agent':
      return (
        <div className="agent">
          <strong>{i.agentId}</strong>: {i.result ?? i.prompt}
        </div>
      );
    case 'notice':
      return <p className={`notice ${i.level}`}>{i.text}</p>;
  }
}
