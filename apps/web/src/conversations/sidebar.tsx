import { useCallback, useEffect, useRef, useState } from 'react';
import type { SessionList, SessionSearchList, SessionSummary } from '@skald/contracts';
import { errorText, type Api } from '../api';
import type { ServerFrame } from '@skald/contracts';
import './conversations.css';

const PAGE = 20;
/** After an answer, the title is written in the background: look again this many times. */
const TITLE_LOOKS_MS = [1_500, 4_000, 9_000];

type Hit = SessionSearchList['items'][number];

/** What the list shows for a conversation without a title yet. */
const untitled = (s: SessionSummary): string => (s.message_count === 0 ? 'New chat' : 'Untitled conversation');

/**
 * Saves a download made with the caller's token (an `<a href>` cannot send the Authorization
 * header): fetched as a blob, handed to the browser under the server's file name.
 */
async function download(api: Api, id: string, format: 'markdown' | 'json'): Promise<void> {
  const res = await fetch(`/api/sessions/${encodeURIComponent(id)}/export?format=${format}`, {
    headers: { authorization: `Bearer ${api.auth.token}` },
  });
  if (!res.ok) throw new Error(`export failed (${res.status})`);
  const name =
    /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ??
    `conversation.${format === 'json' ? 'json' : 'md'}`;
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
 * The conversations of one source: new chat, full-text search, and per conversation open
 * (reopen as the active one), rename, export (Markdown, JSON) and delete. On a narrow screen it is
 * a drawer behind the "Conversations" button.
 */
export function ConversationSidebar({
  api,
  source,
  activeId,
  subscribe,
}: {
  api: Api;
  source: string;
  activeId: string | null;
  /** Frames of the chat socket: the list follows new sessions and finished answers. */
  subscribe: (on: (f: ServerFrame) => void) => () => void;
}) {
  const [items, setItems] = useState<SessionSummary[]>([]);
  const [total, setTotal] = useState(0);
  const [query, setQuery] = useState('');
  const [hits, setHits] = useState<Hit[] | null>(null);
  const [hitTotal, setHitTotal] = useState(0);
  const [renaming, setRenaming] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [error, setError] = useState('');
  const [open, setOpen] = useState(false);
  const pages = useRef(1);

  const load = useCallback(
    async (n = pages.current) => {
      pages.current = n;
      const r = await api.get<SessionList>(
        `/api/sessions?source=${encodeURIComponent(source)}&page=1&per_page=${Math.min(100, n * PAGE)}`,
      );
      setItems(r.items.filter((s) => s.is_interactive && !s.is_ephemeral));
      setTotal(r.total);
    },
    [api, source],
  );

  useEffect(() => {
    load().catch((e: unknown) => setError(errorText(e)));
  }, [load]);

  useEffect(() => {
    const timers: Array<ReturnType<typeof setTimeout>> = [];
    const off = subscribe((f) => {
      if (f.type === 'new_session' || f.type === 'hello') void load().catch(() => undefined);
      if (f.type === 'done' || f.type === 'user_message')
        for (const ms of f.type === 'done' ? TITLE_LOOKS_MS : [300])
          timers.push(setTimeout(() => void load().catch(() => undefined), ms));
    });
    return () => {
      off();
      timers.forEach(clearTimeout);
    };
  }, [subscribe, load]);

  const act = (fn: () => Promise<unknown>) => {
    setError('');
    fn().then(
      () => load(),
      (e: unknown) => setError(errorText(e)),
    );
  };

  const search = async (page: number) => {
    const q = query.trim();
    if (!q) {
      setHits(null);
      return;
    }
    const r = await api.get<SessionSearchList>(
      `/api/sessions?q=${encodeURIComponent(q)}&source=${encodeURIComponent(source)}&page=${page}&per_page=${PAGE}`,
    );
    setHits((prev) => (page === 1 || !prev ? r.items : [...prev, ...r.items]));
    setHitTotal(r.total);
  };

  const openConversation = (id: string) => {
    setOpen(false);
    if (id === activeId) return;
    act(() => api.post(`/api/sessions/${encodeURIComponent(id)}/activate`));
  };

  return (
    <aside className={`conversations${open ? ' open' : ''}`} aria-label="Conversations">
      <div className="conversations-bar">
        <button
          type="button"
          className="conversations-toggle"
          aria-expanded={open}
          aria-controls="conversation-panel"
          onClick={() => setOpen(!open)}
        >
          Conversations
        </button>
        <button
          data-shortcut="new-chat"
          aria-keyshortcuts="Control+Shift+O"
          type="button"
          onClick={() => {
            setOpen(false);
            act(() => api.post(`/api/sessions?source=${encodeURIComponent(source)}`));
          }}
        >
          New chat
        </button>
      </div>
      <div id="conversation-panel" className="conversation-panel">
        <form
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            search(1).catch((err: unknown) => setError(errorText(err)));
          }}
        >
          <label htmlFor="conversation-search">Search conversations</label>
          <div className="search-row">
            <input
              id="conversation-search"
              data-shortcut="search"
              aria-keyshortcuts="Control+K"
              type="search"
              value={query}
              maxLength={200}
              onChange={(e) => {
                setQuery(e.target.value);
                if (!e.target.value.trim()) setHits(null);
              }}
            />
            <button type="submit">Search</button>
          </div>
        </form>
        {error ? <p role="alert">{error}</p> : null}
        {hits ? (
          <section aria-label="Search results">
            <p className="muted" role="status">
              {hitTotal === 0
                ? 'No conversation matches.'
                : `${hitTotal} conversation${hitTotal === 1 ? '' : 's'} match.`}
            </p>
            <ul className="conversation-list">
              {hits.map((h) => (
                <li key={h.id}>
                  <button type="button" className="conversation-open" onClick={() => openConversation(h.id)}>
                    <span className="conversation-title">{h.title ?? 'Untitled conversation'}</span>
                    <span className="conversation-snippet">{h.snippet}</span>
                  </button>
                </li>
              ))}
            </ul>
            {hits.length < hitTotal ? (
              <button
                type="button"
                className="secondary"
                onClick={() => {
                  search(Math.floor(hits.length / PAGE) + 1).catch((e: unknown) => setError(errorText(e)));
                }}
              >
                More results
              </button>
            ) : null}
          </section>
        ) : (
          <>
            <h2 className="sr-only">Your conversations</h2>
            <ul className="conversation-list">
              {items.map((s) => {
                const title = s.title ?? untitled(s);
                const current = s.id === activeId;
                return (
                  <li key={s.id} className={current ? 'current' : undefined}>
                    {renaming === s.id ? (
                      <form
                        className="rename"
                        onSubmit={(e) => {
                          e.preventDefault();
                          setRenaming(null);
                          act(() => api.patch(`/api/sessions/${encodeURIComponent(s.id)}`, { title: name }));
                        }}
                      >
                        <label className="sr-only" htmlFor={`rename-${s.id}`}>
                          New title
                        </label>
                        <input
                          id={`rename-${s.id}`}
                          value={name}
                          maxLength={200}
                          required
                          autoFocus
                          onChange={(e) => setName(e.target.value)}
                          onKeyDown={(e) => {
                            if (e.key === 'Escape') setRenaming(null);
                          }}
                        />
                        <button type="submit">Save</button>
                        <button type="button" className="secondary" onClick={() => setRenaming(null)}>
                          Cancel
                        </button>
                      </form>
                    ) : (
                      <button
                        type="button"
                        className="conversation-open"
                        aria-current={current ? 'true' : undefined}
                        onClick={() => openConversation(s.id)}
                      >
                        <span className="conversation-title">{title}</span>
                        {s.last_message_at ? (
                          <span className="conversation-snippet">{new Date(s.last_message_at).toLocaleString()}</span>
                        ) : null}
                      </button>
                    )}
                    <details className="conversation-menu">
                      <summary aria-label={`Actions for ${title}`}>⋯</summary>
                      <div
                        className="menu-items"
                        onClick={(e) => {
                          // an action was chosen: the menu closes so that nothing is covered by it
                          if ((e.target as HTMLElement).closest('button'))
                            e.currentTarget.closest('details')?.removeAttribute('open');
                        }}
                      >
                        <button
                          type="button"
                          className="secondary"
                          onClick={() => {
                            setName(s.title ?? '');
                            setRenaming(s.id);
                          }}
                        >
                          Rename
                        </button>
                        <button
                          type="button"
                          className="secondary"
                          onClick={() => {
                            download(api, s.id, 'markdown').catch((e: unknown) => setError(errorText(e)));
                          }}
                        >
                          Export Markdown
                        </button>
                        <button
                          type="button"
                          className="secondary"
                          onClick={() => {
                            download(api, s.id, 'json').catch((e: unknown) => setError(errorText(e)));
                          }}
                        >
                          Export JSON
                        </button>
                        <button
                          type="button"
                          className="danger"
                          onClick={() => {
                            if (confirm(`Delete “${title}” and everything in it? This cannot be undone.`))
                              act(() => api.delete(`/api/sessions/${encodeURIComponent(s.id)}`));
                          }}
                        >
                          Delete
                        </button>
                      </div>
                    </details>
                  </li>
                );
              })}
            </ul>
            {items.length < total && pages.current * PAGE < 100 ? (
              <button type="button" className="secondary" onClick={() => void load(pages.current + 1)}>
                Show more
              </button>
            ) : null}
          </>
        )}
      </div>
    </aside>
  );
}
