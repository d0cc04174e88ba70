import { useEffect, useState } from 'react';
import type { SessionDetail } from '@skald/contracts';
import type { Api } from './api';

/** `#session/{id}`: the debug tree of one session (sub-agents between their agent rows). */
export function SessionView({ api, id }: { api: Api; id: string }) {
  const [detail, setDetail] = useState<SessionDetail | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    api
      .get<SessionDetail>(`/api/sessions/${encodeURIComponent(id)}`)
      .then(setDetail, (e: Error) => setError(e.message));
  }, [api, id]);
  return (
    <main className="session-view">
      <button type="button" onClick={() => history.back()}>
        Back
      </button>
      <h2>Session {id}</h2>
      {error ? <p role="alert">{error}</p> : null}
      <ol className="tree">
        {(detail?.messages ?? []).map((m, n) => {
          const row = m as Record<string, unknown>;
          return (
            <li key={n} className={`row ${String(row.kind)}`}>
              <strong>{String(row.kind)}</strong>
              {typeof row.name === 'string' ? ` ${row.name}` : ''}
              {typeof row.status === 'string' ? <span className="status"> {row.status}</span> : null}
              <pre>
                {typeof row.content === 'string'
                  ? row.content
                  : typeof row.result === 'string'
                    ? row.result
                    : JSON.stringify(row.arguments ?? '')}
              </pre>
            </li>
          );
        })}
      </ol>
    </main>
  );
}
