import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { RemoteError } from '@skald/messaging/bus-errors';
import { recordAttackSuite } from '@skald/testing';
import { SessionsRepository } from '../sessions/sessions.repository';
import { InboxRepository } from './inbox.repository';

jest.setTimeout(120_000);

const CAP_MESSAGE =
  /^per-user limit queued_messages reached: at most 5 messages waiting in inboxes \(you have 5\), set by SKALD_MAX_QUEUED_MESSAGES_PER_USER\./;

function refusals(rs: Array<PromiseSettledResult<unknown>>): unknown[] {
  return rs.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
}

/**
 * Per-user cap on queued inbox messages (`SKALD_MAX_QUEUED_MESSAGES_PER_USER`): the inbox trigger
 * counts them exactly (user_inbox_queued), the submit's statement sets the cap.
 */
describe('inbox: per-user cap on queued messages', () => {
  let ds: DataSource;
  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 8 } });
    await ds.initialize();
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  const queued = async (userId: string) =>
    Number(
      (
        await ds.query<Array<{ n: string }>>(
          `SELECT count(*) AS n FROM session_inbox WHERE user_id = $1 AND status = 'queued'`,
          [userId],
        )
      )[0].n,
    );
  const counter = async (userId: string) =>
    Number(
      (
        await ds.query<Array<{ queued: number }>>(`SELECT queued FROM user_inbox_queued WHERE user_id = $1`, [userId])
      )[0]?.queued ?? 0,
    );
  const msg = (clientMessageId: string) => ({
    clientMessageId,
    content: `m ${clientMessageId}`,
    delivery: 'queue' as const,
    isSynthetic: false,
  });

  it('40 concurrent submits over two sessions at a cap of 5: exactly 5 accepted, 35 rate_limited naming the cap', async () => {
    const inbox = new InboxRepository(ds, { queuedMessages: 5 });
    const sessions = new SessionsRepository(ds);
    const userId = randomUUID();
    await sessions.active({ userId, source: 'web' });
    const { id: telegram } = await sessions.active({ userId, source: 'telegram' });
    const rs = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) =>
        i % 4 === 3
          ? // The long path (a session created first) stores with `store`.
            inbox.store({ userId, sessionId: telegram, ...msg(`c${i}`) })
          : inbox.submitToActive({ userId, source: i % 2 ? 'telegram' : 'web', role: 'user' }, msg(`c${i}`)),
      ),
    );
    const accepted = rs.filter((r) => r.status === 'fulfilled').length;
    const refused = refusals(rs);
    recordAttackSuite('fairness', 'queued messages cap', { attempts: 40, accepted, cap: 5 });
    expect(accepted).toBe(5);
    expect(await queued(userId)).toBe(5);
    expect(await counter(userId)).toBe(5);
    expect(refused).toHaveLength(35);
    for (const e of refused) {
      expect(e).toBeInstanceOf(RemoteError);
      expect((e as RemoteError).body.code).toBe('rate_limited');
      expect((e as RemoteError).body.message).toMatch(CAP_MESSAGE);
    }
    // Every accepted message is there (nothing accepted is lost).
    const ids = rs.flatMap((r, i) => (r.status === 'fulfilled' ? [`c${i}`] : []));
    const rows = await ds.query<Array<{ client_message_id: string }>>(
      `SELECT client_message_id FROM session_inbox WHERE user_id = $1 ORDER BY client_message_id`,
      [userId],
    );
    expect(rows.map((r) => r.client_message_id)).toEqual([...ids].sort());

    // An idempotent re-submit of an accepted message at the cap is answered as before, not counted.
    const first = rs.findIndex((r) => r.status === 'fulfilled');
    const again = await inbox.submitToActive(
      { userId, source: first % 2 ? 'telegram' : 'web', role: 'user' },
      msg(`c${first}`),
    );
    expect(again).toMatchObject({ duplicate: true });
    const againStored = await inbox.store({ userId, sessionId: telegram, ...msg(`c${first}`) });
    expect(againStored).toMatchObject({ duplicate: true });
    expect(await counter(userId)).toBe(5);

    // Another user is not counted against this one.
    const other = randomUUID();
    await sessions.active({ userId: other, source: 'web' });
    await expect(
      inbox.submitToActive({ userId: other, source: 'web', role: 'user' }, msg('o1')),
    ).resolves.toMatchObject({
      duplicate: false,
    });
  });

  it('an item leaving `queued` (entered, discarded, its conversation deleted) frees its place; system items are counted, never refused', async () => {
    const inbox = new InboxRepository(ds, { queuedMessages: 5 });
    const sessions = new SessionsRepository(ds);
    const userId = randomUUID();
    const { id: web } = await sessions.active({ userId, source: 'web' });
    for (let i = 0; i < 5; i++) await inbox.submitToActive({ userId, source: 'web', role: 'user' }, msg(`q${i}`));
    await expect(inbox.submitToActive({ userId, source: 'web', role: 'user' }, msg('over'))).rejects.toMatchObject({
      body: { code: 'rate_limited' },
    });
    const [a, b] = await ds.query<Array<{ id: string }>>(
      `SELECT id FROM session_inbox WHERE user_id = $1 ORDER BY ord LIMIT 2`,
      [userId],
    );
    await ds.query(`UPDATE session_inbox SET status = 'entered', settled_at = now() WHERE id = $1`, [a.id]);
    await ds.query(`UPDATE session_inbox SET status = 'discarded', settled_at = now() WHERE id = $1`, [b.id]);
    expect(await counter(userId)).toBe(3);
    await inbox.submitToActive({ userId, source: 'web', role: 'user' }, msg('after1'));
    await inbox.submitToActive({ userId, source: 'web', role: 'user' }, msg('after2'));
    await expect(inbox.submitToActive({ userId, source: 'web', role: 'user' }, msg('over2'))).rejects.toMatchObject({
      body: { code: 'rate_limited' },
    });
    // A system insert (a job's prompt, a task's result: no cap set) is counted but not refused.
    await ds.query(
      `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery, is_synthetic)
       VALUES (gen_random_uuid(), $1, $2, 'job-delivery:x', '', 'steer', true)`,
      [web, userId],
    );
    expect(await counter(userId)).toBe(6);
    expect(await queued(userId)).toBe(6);
    // The conversation deleted: its queued items go with it, and so does their count.
    const { id: telegram } = await sessions.active({ userId, source: 'telegram' });
    await ds.query(`DELETE FROM sessions WHERE id = $1`, [web]);
    expect(await counter(userId)).toBe(0);
    await expect(
      inbox.submitToActive({ userId, source: 'telegram', role: 'user' }, msg('fresh')),
    ).resolves.toMatchObject({ sessionId: telegram, duplicate: false });
    expect(await counter(userId)).toBe(1);
  });
});
