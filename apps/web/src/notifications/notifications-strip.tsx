import { useCallback, useState } from 'react';
import type { NotificationList } from '@skald/contracts';
import type { Api } from '../api';
import type { ServerFrame } from '@skald/contracts';
import { fromFrame, mergeNotifications, NOTIFICATIONS_KEPT, type Notification } from './notifications';

/**
 * The user's notifications (cron results): `GET /api/notifications` is their truth, loaded by
 * `reload` (on every socket open: the start and each reconnect); live `notification` events join
 * them. Each shows once.
 */
export function useNotifications(api: Api): {
  notifications: Notification[];
  onFrame: (f: ServerFrame) => void;
  reload: () => void;
} {
  const [notifications, setNotifications] = useState<Notification[]>([]);
  const reload = useCallback(() => {
    void api.get<NotificationList>(`/api/notifications?limit=${NOTIFICATIONS_KEPT}`).then(
      (r) => setNotifications((shown) => mergeNotifications(shown, r.items, true)),
      () => undefined,
    );
  }, [api]);
  const onFrame = useCallback((f: ServerFrame) => {
    const n = fromFrame(f, new Date());
    if (n) setNotifications((shown) => mergeNotifications(shown, [n]));
  }, []);
  return { notifications, onFrame, reload };
}

const when = (iso: string): string => {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'short' });
};

/** The notifications under the status bar, newest first, folded away until opened. */
export function NotificationsStrip({ notifications }: { notifications: Notification[] }) {
  if (notifications.length === 0) return null;
  return (
    <details className="notifications">
      <summary>Notifications ({notifications.length})</summary>
      <ul aria-label="notifications">
        {notifications.map((n) => (
          <li key={n.id}>
            <time dateTime={n.created_at}>{when(n.created_at)}</time>{' '}
            {n.refs.session_id ? <a href={`#session/${n.refs.session_id}`}>{n.summary}</a> : n.summary}
          </li>
        ))}
      </ul>
    </details>
  );
}
