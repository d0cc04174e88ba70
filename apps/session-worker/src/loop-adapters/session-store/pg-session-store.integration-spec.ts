import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { queryRows } from '@skald/persistence/query-rows';
import { LeaseLostError, type NewMessage, type SessionEventDraft } from '@skald/agent-loop';
import { LeaseRepository } from '../../lease/lease.repository';
import type { CommittedEvent } from './committed-event';
import { PgSessionStore } from './pg-session-store';
import { openRootFrame } from '../../testing-fixtures/root-frame';
import { plainMessage } from '../../testing-fixtures/plain-message';

jest.setTimeout(30_000);

/**
 * The store's repository-level rules on real Postgres: every commit is fenced by the lease epoch
 * (a worker that lost its lease writes nothing), messages read back in the order they were
 * appended, a session's event seqs are contiguous from 1 whatever the concurrency, and events are
 * announced only once committed.
 */
describe('PgSessionStore', () => {
  let ds: DataSource;
  let leases: LeaseRepository;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 8 } });
    await ds.initialize();
    leases = new LeaseRepository(ds);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  async function held(ttlMs = 60_000) {
    const sessionId = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [sessionId, randomUUID()]);
    const lease = (await leases.acquire(sessionId, `w-${randomUUID()}`, ttlMs))!;
    const announced: CommittedEvent[] = [];
    const store = new PgSessionStore(ds, { owner: lease.owner, epoch: lease.epoch }, (e) => announced.push(...e));
    const frameId = randomUUID();
    await store.commit(sessionId, [openRootFrame(sessionId, frameId)], []);
    return { sessionId, lease, store, announced, frameId };
  }

  const message = (sessionId: string, frameId: string, content: string): NewMessage =>
    plainMessage(sessionId, frameId, 'user', content);
  const note = (content: string): SessionEventDraft => ({ type: 'thinking', message_id: 'm', content });

  const seqs = async (sessionId: string): Promise<number[]> =>
    (
      await queryRows<{ seq: number }>(
        ds,
        `SELECT seq::int AS seq FROM session_events WHERE session_id = $1 ORDER BY seq`,
        [sessionId],
      )
    ).map((r) => r.seq);
  const lastSeq = async (sessionId: string): Promise<number> =>
    Number(
      (await queryRows<{ last_seq: string }>(ds, `SELECT last_seq FROM sessions WHERE id = $1`, [sessionId]))[0]
        .last_seq,
    );

  it('a worker whose lease was taken over writes nothing: no row, no event, nothing announced', async () => {
    const { sessionId, store, announced, frameId } = await held();
    await store.commit(
      sessionId,
      [{ kind: 'appendMessage', message: message(sessionId, frameId, 'before') }],
      [note('a')],
    );
    // The lease runs out (set in the row, not waited for: a loaded machine must not expire it early).
    await ds.query(`UPDATE session_leases SET expires_at = now() - interval '1 second' WHERE session_id = $1`, [
      sessionId,
    ]);
    const next = await leases.acquire(sessionId, 'other', 60_000);
    expect(next?.epoch).toBe(2);
    await expect(
      store.commit(sessionId, [{ kind: 'appendMessage', message: message(sessionId, frameId, 'stale') }], [note('b')]),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect((await store.listMessages(frameId)).map((m) => m.content)).toEqual(['before']);
    expect(await seqs(sessionId)).toEqual([1]);
    expect(announced.map((e) => e.seq)).toEqual([1]);
  });

  it('a worker that released its lease (a SIGTERM hand-over) writes nothing more', async () => {
    const { sessionId, lease, store, frameId } = await held();
    await leases.release(lease);
    await expect(
      store.commit(sessionId, [{ kind: 'appendMessage', message: message(sessionId, frameId, 'late') }], [note('c')]),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(await store.listMessages(frameId)).toEqual([]);
    expect(await lastSeq(sessionId)).toBe(0);
  });

  it("concurrent commits: seqs 1..n without gaps or duplicates, each commit's events together and in order; messages read back in append order", async () => {
    const { sessionId, store, announced, frameId } = await held();
    const sizes = Array.from({ length: 30 }, (_, i) => (i % 3) + 1);
    await Promise.all(
      sizes.map((n, i) =>
        store.commit(
          sessionId,
          [],
          Array.from({ length: n }, (_, k) => note(`${i}.${k}`)),
        ),
      ),
    );
    const total = sizes.reduce((a, b) => a + b, 0);
    expect(await seqs(sessionId)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(await lastSeq(sessionId)).toBe(total);
    expect([...announced.map((e) => e.seq)].sort((a, b) => a - b)).toEqual(
      Array.from({ length: total }, (_, i) => i + 1),
    );
    // One commit's events are contiguous and in the order given.
    for (const [i, n] of sizes.entries()) {
      const mine = announced.filter((e) => (e.event as { content: string }).content.startsWith(`${i}.`));
      expect(mine.map((e) => (e.event as { content: string }).content)).toEqual(
        Array.from({ length: n }, (_, k) => `${i}.${k}`),
      );
      expect(mine[mine.length - 1].seq - mine[0].seq).toBe(n - 1);
    }
    for (let i = 0; i < 20; i++)
      await store.commit(sessionId, [{ kind: 'appendMessage', message: message(sessionId, frameId, `m${i}`) }], []);
    expect((await store.listMessages(frameId)).map((m) => m.content)).toEqual(
      Array.from({ length: 20 }, (_, i) => `m${i}`),
    );
  });

  it('a refused commit leaves nothing behind and announces nothing', async () => {
    const { sessionId, store, announced, frameId } = await held();
    const dup = message(sessionId, frameId, 'x');
    await store.commit(sessionId, [{ kind: 'appendMessage', message: dup }], [note('ok')]);
    await expect(
      store.commit(
        sessionId,
        [
          { kind: 'appendMessage', message: message(sessionId, frameId, 'y') },
          { kind: 'appendMessage', message: dup },
        ],
        [note('never')],
      ),
    ).rejects.toThrow();
    expect((await store.listMessages(frameId)).map((m) => m.content)).toEqual(['x']);
    expect(await seqs(sessionId)).toEqual([1]);
    expect(announced.map((e) => (e.event as { content: string }).content)).toEqual(['ok']);
  });

  it('an inbox item moved to another conversation after it was read (a /new re-homing a delivery) is not entered, consumed or discarded here', async () => {
    const { sessionId, store, announced, frameId } = await held();
    const [{ user_id: userId }] = await queryRows<{ user_id: string }>(
      ds,
      `SELECT user_id FROM sessions WHERE id = $1`,
      [sessionId],
    );
    const home = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'home')`, [home, userId]);
    for (const kind of ['enterInbox', 'consumeInbox', 'discardInbox'] as const) {
      const inboxId = randomUUID();
      await ds.query(
        `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery, is_synthetic)
         VALUES ($1, $2, $3, $4, 'task result', 'steer', true)`,
        [inboxId, sessionId, userId, `c-${inboxId}`],
      );
      // The driver read it before; then the delivery moves to the home conversation.
      await ds.query(`UPDATE session_inbox SET session_id = $2 WHERE id = $1`, [inboxId, home]);
      const m = message(sessionId, frameId, `entered ${kind}`);
      const mutation =
        kind === 'enterInbox'
          ? { kind, inboxId, message: m }
          : ({ kind, inboxId } as { kind: typeof kind; inboxId: string });
      if (kind === 'discardInbox') await store.commit(sessionId, [mutation], []);
      else
        await expect(store.commit(sessionId, [mutation], [note(kind)])).rejects.toThrow(
          /moved to another conversation/,
        );
      const [row] = await queryRows<{ session_id: string; status: string }>(
        ds,
        `SELECT session_id, status FROM session_inbox WHERE id = $1`,
        [inboxId],
      );
      expect(row).toEqual({ session_id: home, status: 'queued' });
    }
    expect(
      await queryRows<{ '?column?': number }>(ds, `SELECT 1 FROM chat_history WHERE session_id = $1`, [sessionId]),
    ).toEqual([]);
    expect(announced).toEqual([]);
  });
});
