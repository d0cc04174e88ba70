import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { SessionsRepository } from '../sessions/sessions.repository';
import { UserSettingsRepository } from '../settings/user-settings.repository';
import type { SubmitService } from '../submit/submit.service';
import { DeliveryRouting } from './delivery-routing.service';
import { JobSessionsRepository } from './job-sessions.repository';
import { JobSessionsService } from './job-sessions.service';

jest.setTimeout(60_000);

/**
 * A finished task's result is never left in a conversation nobody sees: when the conversation that
 * started the task was reset (`/new`), the delivery enters the home source's active conversation —
 * whether it was already waiting there at the reset or arrives after it, and however the two race.
 */
describe('deliveries of a reset conversation go to the home source', () => {
  let ds: DataSource;
  let sessions: SessionsRepository;
  let settings: UserSettingsRepository;
  let repo: JobSessionsRepository;
  let routing: DeliveryRouting;
  let jobs: JobSessionsService;
  const woken: string[] = [];

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 6 } });
    await ds.initialize();
    sessions = new SessionsRepository(ds);
    settings = new UserSettingsRepository(ds);
    repo = new JobSessionsRepository(ds);
    routing = new DeliveryRouting(sessions, settings, repo);
    const submit = { wake: (id: string) => woken.push(id) } as unknown as SubmitService;
    jobs = new JobSessionsService(null as never, repo, sessions, submit, routing);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  const queuedIn = async (sessionId: string): Promise<string[]> =>
    (
      await ds.query<Array<{ client_message_id: string }>>(
        `SELECT client_message_id FROM session_inbox WHERE session_id = $1 AND status = 'queued' ORDER BY ord`,
        [sessionId],
      )
    ).map((r) => r.client_message_id);
  const deliver = (userId: string, sessionId: string, deliveryId: string) =>
    jobs.deliver({
      actor: { userId, role: 'user' },
      deliveryId,
      sessionId,
      toolName: 'task_completed',
      arguments: { task_id: deliveryId, title: 'Research' },
      result: `result of ${deliveryId}`,
    });

  it('a delivery waiting in the conversation at /new moves to the new home conversation', async () => {
    const userId = randomUUID();
    const old = (await sessions.active({ userId, source: 'web' })).id;
    await deliver(userId, old, 'run-1');
    expect(await queuedIn(old)).toEqual(['job-delivery:run-1']);

    const fresh = await sessions.active({ userId, source: 'web' }, true);
    expect(await routing.rehomeQueued(userId, old)).toBe(fresh.id);
    expect(await queuedIn(old)).toEqual([]);
    expect(await queuedIn(fresh.id)).toEqual(['job-delivery:run-1']);
  });

  it('a delivery arriving after /new goes to the home source (named by /sethome), once', async () => {
    const userId = randomUUID();
    await settings.setHomeSource({ userId }, 'telegram');
    const old = (await sessions.active({ userId, source: 'web' })).id;
    await sessions.active({ userId, source: 'web' }, true);
    const home = (await sessions.active({ userId, source: 'telegram' })).id;

    expect(await deliver(userId, old, 'run-2')).toEqual({ session_id: home, duplicate: false });
    expect(await deliver(userId, old, 'run-2')).toMatchObject({ duplicate: true });
    expect(await queuedIn(old)).toEqual([]);
    expect(await queuedIn(home)).toEqual(['job-delivery:run-2']);
    expect(woken).toContain(home);
  });

  it('a delivery to an active conversation stays there; another user cannot deliver into it', async () => {
    const userId = randomUUID();
    const active = (await sessions.active({ userId, source: 'web' })).id;
    expect(await deliver(userId, active, 'run-3')).toEqual({ session_id: active, duplicate: false });
    await expect(deliver(randomUUID(), active, 'run-4')).rejects.toMatchObject({ body: { code: 'not_found' } });
    expect(await queuedIn(active)).toEqual(['job-delivery:run-3']);
  });

  it('racing /new: every delivery ends queued exactly once, in the conversation now active', async () => {
    for (let i = 0; i < 25; i++) {
      const userId = randomUUID();
      const old = (await sessions.active({ userId, source: 'web' })).id;
      const reset = async () => {
        const fresh = await sessions.active({ userId, source: 'web' }, true);
        await routing.rehomeQueued(userId, old);
        return fresh.id;
      };
      const [, fresh] = await Promise.all([deliver(userId, old, `race-${i}`), reset()]);
      const rows = await ds.query<Array<{ session_id: string }>>(
        `SELECT session_id FROM session_inbox WHERE user_id = $1 AND status = 'queued'`,
        [userId],
      );
      expect(rows).toEqual([{ session_id: fresh }]);
    }
  });
});
