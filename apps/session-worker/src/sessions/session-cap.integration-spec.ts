import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { RemoteError } from '@skald/messaging/bus-errors';
import { recordAttackSuite } from '@skald/testing';
import { SessionsRepository } from './sessions.repository';

jest.setTimeout(120_000);

/** Per-user cap on conversations (`SKALD_MAX_SESSIONS_PER_USER`), enforced where sessions are created. */
describe('sessions: per-user cap', () => {
  let ds: DataSource;
  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 6 } });
    await ds.initialize();
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  it('30 concurrent new conversations at a cap of 5: exactly 5 are created, the rest get rate_limited naming the cap', async () => {
    const repo = new SessionsRepository(ds, { sessions: 5 });
    const userId = randomUUID();
    // Different sources (each its own pair lock) and `/new` on one source: all race for the cap.
    const rs = await Promise.allSettled(
      Array.from({ length: 30 }, (_, i) => repo.active({ userId, source: i % 2 ? `s${i}` : 'web' }, i % 2 === 0)),
    );
    const created = rs.filter((r) => r.status === 'fulfilled' && r.value.created).length;
    const refused = rs.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    const [row] = await ds.query<Array<{ n: string }>>(`SELECT count(*) AS n FROM sessions WHERE user_id = $1`, [
      userId,
    ]);
    recordAttackSuite('fairness', 'sessions cap', { attempts: 30, created, cap: 5 });
    expect(created).toBe(5);
    expect(Number(row.n)).toBe(5);
    expect(refused).toHaveLength(25);
    for (const e of refused) {
      expect(e).toBeInstanceOf(RemoteError);
      expect((e as RemoteError).body.code).toBe('rate_limited');
      expect((e as RemoteError).body.message).toMatch(
        /^per-user limit sessions reached: at most 5 conversations \(you have 5\), set by SKALD_MAX_SESSIONS_PER_USER\./,
      );
    }
    // The active session of a source that has one is still answered at the cap (nothing is created).
    await expect(repo.active({ userId, source: 'web' })).resolves.toMatchObject({ created: false });
    // Another user is not counted against this one.
    await expect(repo.active({ userId: randomUUID(), source: 'web' })).resolves.toMatchObject({ created: true });
  });
});
