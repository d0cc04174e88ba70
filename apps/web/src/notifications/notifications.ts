import type { NotificationDto, ServerFrame } from '@skald/contracts';

/** A notification as `GET /api/notifications` gives it; a live `notification` event becomes one. */
export type Notification = NotificationDto;

/** How many notifications the client keeps and loads: the newest. */
export const NOTIFICATIONS_KEPT = 20;

let unnamed = 0;

/**
 * The notification a live `notification` event announces, or null for another frame. Its id is
 * its run's (`refs.run_id`: the id `GET /api/notifications` gives the same notification), so the
 * two show once; one without a run is its own. `created_at` is when it arrived.
 */
export function fromFrame(f: ServerFrame, now: Date): Notification | null {
  if (f.type !== 'notification') return null;
  const refs: Notification['refs'] = {};
  for (const k of ['job_id', 'run_id', 'session_id'] as const) {
    const ref = f.refs[k];
    if (ref !== undefined) refs[k] = ref;
  }
  return {
    id: refs.run_id ?? `live:${++unnamed}`,
    summary: f.summary,
    refs,
    created_at: now.toISOString(),
  };
}

/**
 * `shown` and `incoming` by id, newest first, the newest kept. `stored`: `incoming` is a page of
 * `GET /api/notifications`, whose rows replace the live copies of theirs (its time is the truth).
 */
export function mergeNotifications(
  shown: readonly Notification[],
  incoming: readonly Notification[],
  stored = false,
): Notification[] {
  const byId = new Map(shown.map((n) => [n.id, n]));
  for (const n of incoming) if (stored || !byId.has(n.id)) byId.set(n.id, n);
  return [...byId.values()]
    .sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at))
    .slice(0, NOTIFICATIONS_KEPT);
}
