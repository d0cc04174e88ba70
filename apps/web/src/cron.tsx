import { useCallback, useState } from 'react';
import { errorText, type Api } from './api';
import { usePolling } from './poll';

interface CronJob {
  id: string;
  title: string;
  prompt: string;
  agent_id: string;
  cron: string;
  timezone: string;
  enabled: boolean;
  next_run_at: string | null;
  last_run_at: string | null;
  running_session_id?: string;
}

interface JobRun {
  id: string;
  job_id: string;
  session_id: string | null;
  status: 'running' | 'succeeded' | 'failed' | 'cancelled';
  started_at: string;
  completed_at: string | null;
  final_response?: string;
  error?: string;
}

const when = (t: string | null) => (t ? new Date(t).toLocaleString() : '—');

/** Cron jobs: schedule agents, run one now, kill a running one, and read the runs. */
export function CronJobs({ api }: { api: Api }) {
  const [jobs, setJobs] = useState<CronJob[]>([]);
  const [runs, setRuns] = useState<JobRun[]>([]);
  const [error, setError] = useState('');
  const [form, setForm] = useState({
    title: '',
    prompt: '',
    cron: '0 7 * * *',
    timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
  });
  const fail = (e: unknown) => setError(errorText(e));
  const load = useCallback(() => {
    void api.get<{ items: CronJob[] }>('/api/cron/jobs').then((r) => setJobs(r.items), fail);
    void api.get<{ items: JobRun[] }>('/api/cron/runs').then((r) => setRuns(r.items), fail);
  }, [api]);
  usePolling(load, 3000);
  const act = (p: Promise<unknown>) => void p.then(load, fail);
  return (
    <main className="cron">
      <h2>Scheduled jobs</h2>
      {error ? <p role="alert">{error}</p> : null}
      <table>
        <caption>Jobs</caption>
        <thead>
          <tr>
            <th scope="col">Title</th>
            <th scope="col">Schedule</th>
            <th scope="col">Next run</th>
            <th scope="col">Last run</th>
            <th scope="col">State</th>
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {jobs.map((j) => (
            <tr key={j.id}>
              <td>{j.title}</td>
              <td>
                <code>{j.cron}</code> {j.timezone}
              </td>
              <td>{j.enabled ? when(j.next_run_at) : 'disabled'}</td>
              <td>{when(j.last_run_at)}</td>
              <td>{j.running_session_id ? <a href={`#session/${j.running_session_id}`}>running</a> : 'idle'}</td>
              <td className="actions">
                <button type="button" onClick={() => act(api.post(`/api/cron/jobs/${j.id}/run`))}>
                  Run now <span className="sr-only">{j.title}</span>
                </button>
                <button type="button" onClick={() => act(api.post(`/api/cron/jobs/${j.id}/toggle`))}>
                  {j.enabled ? 'Disable' : 'Enable'} <span className="sr-only">{j.title}</span>
                </button>
                {j.running_session_id ? (
                  <button type="button" className="danger" onClick={() => act(api.post(`/api/cron/jobs/${j.id}/kill`))}>
                    Kill <span className="sr-only">{j.title}</span>
                  </button>
                ) : null}
                <button type="button" className="danger" onClick={() => act(api.delete(`/api/cron/jobs/${j.id}`))}>
                  Delete <span className="sr-only">{j.title}</span>
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form
        className="grid-form"
        aria-label="new job"
        onSubmit={(e) => {
          e.preventDefault();
          void api.post('/api/cron/jobs', form).then(() => {
            setError('');
            setForm({ ...form, title: '', prompt: '' });
            load();
          }, fail);
        }}
      >
        <label>
          Title
          <input value={form.title} onChange={(e) => setForm({ ...form, title: e.target.value })} required />
        </label>
        <label>
          Schedule (cron)
          <input value={form.cron} onChange={(e) => setForm({ ...form, cron: e.target.value })} required />
        </label>
        <label>
          Time zone
          <input value={form.timezone} onChange={(e) => setForm({ ...form, timezone: e.target.value })} />
        </label>
        <label className="wide">
          What the agent should do
          <textarea
            value={form.prompt}
            onChange={(e) => setForm({ ...form, prompt: e.target.value })}
            required
            rows={3}
          />
        </label>
        <button type="submit">Add job</button>
      </form>
      <table>
        <caption>Runs</caption>
        <thead>
          <tr>
            <th scope="col">Job</th>
            <th scope="col">Started</th>
            <th scope="col">Status</th>
            <th scope="col">Result</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.id}>
              <td>{jobs.find((j) => j.id === r.job_id)?.title ?? r.job_id.slice(0, 8)}</td>
              <td>{when(r.started_at)}</td>
              <td className={`run ${r.status}`}>
                {r.session_id ? <a href={`#session/${r.session_id}`}>{r.status}</a> : r.status}
              </td>
              <td>{r.error ?? r.final_response ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </main>
  );
}

interface SessionRow {
  id: string;
  created_at: string;
  message_count: number;
  last_message_at: string | null;
}

/** `#tic`: the system tick's sessions (each opens its debug view), and running a tick now. */
export function Tic({ api }: { api: Api }) {
  const [status, setStatus] = useState('');
  const [sessions, setSessions] = useState<SessionRow[]>([]);
  const load = useCallback(() => {
    void api.get<{ items: SessionRow[] }>('/api/sessions?source=tic&page=1&per_page=20').then(
      (r) => setSessions(r.items),
      () => undefined,
    );
  }, [api]);
  usePolling(load, 3000);
  return (
    <main className="cron">
      <h2>TIC</h2>
      <p>The system agent&apos;s tick looks after your scheduled work and memory, in sessions of its own.</p>
      <button
        type="button"
        onClick={() =>
          void api.post<{ run_id?: string }>('/api/tic/trigger').then(
            (r) => {
              setStatus(`Started${r?.run_id ? ` (run ${r.run_id.slice(0, 8)})` : ''}.`);
              load();
            },
            (e: unknown) => setStatus(errorText(e)),
          )
        }
      >
        Run the tick now
      </button>
      <p role="status">{status}</p>
      <table>
        <caption>TIC sessions</caption>
        <thead>
          <tr>
            <th scope="col">Started</th>
            <th scope="col">Messages</th>
            <th scope="col">Last message</th>
          </tr>
        </thead>
        <tbody>
          {sessions.map((t) => (
            <tr key={t.id}>
              <td>
                <a href={`#session/${t.id}`}>{when(t.created_at)}</a>
              </td>
              <td>{t.message_count}</td>
              <td>{when(t.last_message_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </main>
  );
}
