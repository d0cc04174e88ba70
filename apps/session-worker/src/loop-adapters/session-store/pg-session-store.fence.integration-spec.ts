import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { LeaseLostError, type Mutation } from '@skald/agent-loop';
import { PgSessionStore } from './pg-session-store';
import { openRootFrame } from '../../testing-fixtures/root-frame';

/**
 * The fence of every commit: a writer whose lease was taken over, or has expired, writes nothing —
 * no row, no event, no seq — with events or without; the holder's events get contiguous seqs.
 */
describe('PgSessionStore: the lease fence', () => {
  let ds: DataSource;
  const owner = `fence-${randomUUID()}`;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  async function session(): Promise<{ sessionId: string; frameId: string; store: PgSessionStore; seqs: number[] }> {
    const sessionId = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [sessionId, randomUUID()]);
    await ds.query(
      `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + interval '1 hour')`,
      [sessionId, owner],
    );
    const seqs: number[] = [];
    const store = new PgSessionStore(ds, { owner, epoch: 1 }, (ev) => seqs.push(...ev.map((e) => e.seq)));
    const frameId = randomUUID();
    await store.commit(sessionId, [openRootFrame(sessionId, frameId)], []);
    return { sessionId, frameId, store, seqs };
  }

  const message = (sessionId: string, frameId: string): Mutation => ({
    kind: 'appendMessage',
    message: {
      id: randomUUID(),
      sessionId,
      frameId,
      role: 'user',
      content: 'hello',
      reasoningContent: null,
      isSynthetic: false,
      attachments: null,
      clientMessageId: null,
      inputTokens: null,
      outputTokens: null,
      createdAt: new Date().toISOString(),
    },
  });

  async function counts(sessionId: string): Promise<{ rows: number; events: number; lastSeq: number }> {
    const [r] = await ds.query<Array<{ rows: number; events: number; lastSeq: number }>>(
      `SELECT (SELECT count(*) FROM chat_history WHERE session_id = $1)::int AS rows,
              (SELECT count(*) FROM session_events WHERE session_id = $1)::int AS events,
              (SELECT last_seq FROM sessions WHERE id = $1)::int AS "lastSeq"`,
      [sessionId],
    );
    return r;
  }

  it('the holder commits rows and events with contiguous seqs', async () => {
    const { sessionId, frameId, store, seqs } = await session();
    await store.commit(
      sessionId,
      [message(sessionId, frameId)],
      [{ type: 'user_message', message_id: randomUUID(), content: 'a' }],
    );
    await store.commit(
      sessionId,
      [message(sessionId, frameId)],
      [
        { type: 'user_message', message_id: randomUUID(), content: 'b' },
        { type: 'done', message_id: randomUUID(), stack_id: frameId, content: 'c' },
      ],
    );
    expect(seqs).toEqual([1, 2, 3]);
    expect(await counts(sessionId)).toEqual({ rows: 2, events: 3, lastSeq: 3 });
    const stored = await ds.query<Array<{ seq: string; type: string }>>(
      `SELECT seq, type FROM session_events WHERE session_id = $1 ORDER BY seq`,
      [sessionId],
    );
    expect(stored.map((e) => [Number(e.seq), e.type])).toEqual([
      [1, 'user_message'],
      [2, 'user_message'],
      [3, 'done'],
    ]);
  });

  it.each([
    ['taken over', `UPDATE session_leases SET owner = 'other', epoch = epoch + 1 WHERE session_id = $1`],
    ['expired', `UPDATE session_leases SET expires_at = now() - interval '1 second' WHERE session_id = $1`],
  ])('a writer whose lease was %s writes nothing, with events or without', async (_what, sql) => {
    const { sessionId, frameId, store, seqs } = await session();
    await store.commit(
      sessionId,
      [message(sessionId, frameId)],
      [{ type: 'user_message', message_id: randomUUID(), content: 'a' }],
    );
    await ds.query(sql, [sessionId]);
    await expect(
      store.commit(
        sessionId,
        [message(sessionId, frameId)],
        [{ type: 'user_message', message_id: randomUUID(), content: 'b' }],
      ),
    ).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.commit(sessionId, [message(sessionId, frameId)], [])).rejects.toBeInstanceOf(LeaseLostError);
    expect(seqs).toEqual([1]);
    expect(await counts(sessionId)).toEqual({ rows: 1, events: 1, lastSeq: 1 });
  });
});
