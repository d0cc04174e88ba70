import { useEffect, useRef, useState } from 'react';
import type { RunContextDto } from '@skald/contracts';
import { errorText, type Api } from '../api';

const lines = (s: string): string[] =>
  s
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);

/**
 * The session's RunContext in a dialog: the working directory (base of relative paths and
 * commands) and pre-authorised paths (reads / writes inside need no approval; a Deny rule still
 * wins). Saved with `PUT /api/sessions/{id}/run-context`; the server's normalised paths come back.
 */
export function RunContextDialog({ api, sessionId, onClose }: { api: Api; sessionId: string; onClose: () => void }) {
  const [rc, setRc] = useState<RunContextDto | null>(null);
  const [form, setForm] = useState({ wd: '', reads: '', writes: '' });
  const [error, setError] = useState('');
  const [saved, setSaved] = useState(false);
  const first = useRef<HTMLInputElement | null>(null);
  const show = (r: RunContextDto) => {
    setRc(r);
    setForm({
      wd: r.working_directory ?? '',
      reads: r.allow_fs_reads.join('\n'),
      writes: r.allow_fs_writes.join('\n'),
    });
  };
  useEffect(() => {
    api.get<RunContextDto>(`/api/sessions/${sessionId}/run-context`).then(show, (e: unknown) => setError(errorText(e)));
  }, [api, sessionId]);
  const close = useRef(onClose);
  close.current = onClose;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') close.current();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
  // the fields are editable once the current RunContext is in (a late answer never overwrites typing)
  const loaded = rc !== null;
  useEffect(() => {
    if (loaded) first.current?.focus();
  }, [loaded]);
  return (
    <div className="viewer-backdrop" onClick={onClose}>
      <div
        className="viewer"
        role="dialog"
        aria-modal="true"
        aria-label="Run context"
        onClick={(e) => e.stopPropagation()}
      >
        <header className="viewer-head">
          <h2>Run context of this conversation</h2>
          <button type="button" onClick={onClose}>
            Close
          </button>
        </header>
        <form
          className="grid-form run-context"
          onSubmit={(e) => {
            e.preventDefault();
            setError('');
            setSaved(false);
            api
              .put<RunContextDto>(`/api/sessions/${sessionId}/run-context`, {
                ...(form.wd.trim() ? { working_directory: form.wd.trim() } : {}),
                allow_fs_reads: lines(form.reads),
                allow_fs_writes: lines(form.writes),
                ...(rc && rc.system_prompt.length > 0 ? { system_prompt: rc.system_prompt } : {}),
              })
              .then(
                (r) => {
                  show(r);
                  setSaved(true);
                },
                (err: unknown) => setError(errorText(err)),
              );
          }}
        >
          <label className="wide">
            Working directory
            <input
              ref={first}
              disabled={rc === null}
              value={form.wd}
              placeholder="/workspace"
              onChange={(e) => setForm({ ...form, wd: e.target.value })}
            />
          </label>
          <label>
            Pre-authorised reads (one path a line)
            <textarea
              rows={4}
              disabled={rc === null}
              value={form.reads}
              onChange={(e) => setForm({ ...form, reads: e.target.value })}
            />
          </label>
          <label>
            Pre-authorised writes (one path a line)
            <textarea
              rows={4}
              disabled={rc === null}
              value={form.writes}
              onChange={(e) => setForm({ ...form, writes: e.target.value })}
            />
          </label>
          <p className="wide muted">
            Paths lie inside the workspace. Reads and writes inside a pre-authorised path need no approval; a Deny rule
            still refuses them.
            {rc?.security_group ? ` Security group: ${rc.security_group}.` : ''}
          </p>
          {error ? (
            <p className="wide" role="alert">
              {error}
            </p>
          ) : null}
          {saved ? (
            <p className="wide" role="status">
              Saved.
            </p>
          ) : null}
          <button type="submit" disabled={rc === null}>
            Save run context
          </button>
        </form>
      </div>
    </div>
  );
}
