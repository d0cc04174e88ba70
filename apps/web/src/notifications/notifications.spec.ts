import { describe, expect, it } from '@jest/globals';
import type { ServerFrame } from '@skald/contracts';
import { fromFrame, mergeNotifications, NOTIFICATIONS_KEPT, type Notification } from './notifications';

const RUN = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const rest = (n: number, at: string): Notification => ({
  id: RUN(n),
  summary: `Cron job ${n} finished`,
  refs: { job_id: RUN(100 + n), run_id: RUN(n) },
  created_at: at,
});
const live = (n: number): ServerFrame => ({
  type: 'notification',
  summary: `Cron job ${n} finished`,
  refs: { job_id: RUN(100 + n), run_id: RUN(n) },
  source: 'web',
});

describe('notifications: GET /api/notifications merged with live `notification` events', () => {
  it('a live event is the notification of its run (the id GET /api/notifications gives it)', () => {
    const n = fromFrame(live(3), new Date('2026-12-06T10:00:00Z'));
    expect(n).toEqual({ ...rest(3, '2026-12-06T10:00:00.000Z') });
    const task: ServerFrame = {
      type: 'task_update',
      job_id: RUN(100),
      title: 'Nightly report',
      agent_id: 'default',
      state: 'completed',
      source: 'web',
    };
    expect(fromFrame(task, new Date())).toBeNull();
  });

  it('after a reload the list is the stored one, newest first', () => {
    const list = mergeNotifications([], [rest(1, '2026-12-05T08:00:00Z'), rest(2, '2026-12-06T08:00:00Z')], true);
    expect(list.map((n) => n.summary)).toEqual(['Cron job 2 finished', 'Cron job 1 finished']);
  });

  it('a live event and the stored row of the same run show once, whichever came first', () => {
    const seenLive = mergeNotifications([], [fromFrame(live(2), new Date('2026-12-06T08:00:01Z'))!]);
    const thenLoaded = mergeNotifications(
      seenLive,
      [rest(2, '2026-12-06T08:00:00Z'), rest(1, '2026-12-05T08:00:00Z')],
      true,
    );
    // the stored row replaces the live copy: its time is the run's end
    expect(thenLoaded).toEqual([rest(2, '2026-12-06T08:00:00Z'), rest(1, '2026-12-05T08:00:00Z')]);
    const loaded = mergeNotifications([], [rest(2, '2026-12-06T08:00:00Z')], true);
    const thenLive = mergeNotifications(loaded, [fromFrame(live(2), new Date('2026-12-06T08:00:01Z'))!]);
    expect(thenLive).toEqual([rest(2, '2026-12-06T08:00:00Z')]);
    // a reload after a reconnect doubles nothing either
    expect(mergeNotifications(thenLoaded, [rest(2, '2026-12-06T08:00:00Z')], true).length).toBe(2);
  });

  it('a live event without a run still shows, once per event', () => {
    const a = fromFrame(
      { type: 'notification', summary: 'hello', refs: {}, source: 'web' },
      new Date('2026-12-06T08:00:00Z'),
    )!;
    const b = fromFrame(
      { type: 'notification', summary: 'hello', refs: {}, source: 'web' },
      new Date('2026-12-06T08:00:00Z'),
    )!;
    expect(mergeNotifications([a], [b]).length).toBe(2);
  });

  it('keeps the newest NOTIFICATIONS_KEPT', () => {
    const many = Array.from({ length: NOTIFICATIONS_KEPT + 5 }, (_, i) =>
      rest(i + 1, new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString()),
    );
    const list = mergeNotifications([], many, true);
    expect(list.length).toBe(NOTIFICATIONS_KEPT);
    expect(list[0]!.id).toBe(RUN(NOTIFICATIONS_KEPT + 5));
  });
});
