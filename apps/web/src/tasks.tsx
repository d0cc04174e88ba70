import { useCallback, useState } from 'react';
import { usePolling } from './poll';
import type { Api } from './api';
import type { ServerFrame } from '@skald/contracts';

export interface Task {
  job_id: string;
  title: string;
  agent_id: string;
  session_id: string | null;
  state: 'running' | 'completed' | 'failed' | 'cancelled';
  error?: string;
}

/**
 * The task strip: background tasks this conversation started (running, and failures of the last
 * 30 minutes), loaded by REST and kept current by `task_update` events.
 */
export function useTasks(api: Api, source: string): [Task[], (f: ServerFrame) => void] {
  const [tasks, setTasks] = useState<Task[]>([]);
  const load = useCallback(() => {
    void api.get<{ items: Task[] }>(`/api/${source}/tasks`).then(
      (r) => setTasks(r.items),
      () => undefined,
    );
  }, [api, source]);
  usePolling(load, 15_000);
  const onFrame = useCallback((f: ServerFrame) => {
    if (f.type !== 'task_update') return;
    const next: Task = {
      job_id: f.job_id,
      title: f.title,
      agent_id: f.agent_id,
      session_id: f.session_id ?? null,
      state: f.state,
      ...(f.error !== undefined ? { error: f.error } : {}),
    };
    setTasks((ts) =>
      next.state === 'completed'
        ? ts.filter((t) => t.job_id !== next.job_id)
        : [...ts.filter((t) => t.job_id !== next.job_id), next],
    );
  }, []);
  return [tasks, onFrame];
}

export function TaskStrip({ tasks }: { tasks: Task[] }) {
  if (tasks.length === 0) return null;
  return (
    <ul className="task-strip" aria-label="background tasks">
      {tasks.map((t) => (
        <li key={t.job_id} className={`task ${t.state}`}>
          {t.session_id ? <a href={`#session/${t.session_id}`}>{t.title || t.agent_id}</a> : t.title || t.agent_id}{' '}
          <span className="status">{t.state}</span>
          {t.error ? <span className="notice error"> {t.error}</span> : null}
        </li>
      ))}
    </ul>
  );
}
