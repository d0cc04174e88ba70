import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { Mutation } from '@skald/agent-loop';
import { queryRows } from '@skald/persistence/query-rows';
import { PgSessionStore } from './pg-session-store';
import { TurnStateRepository } from '../../sessions/turn-state.repository';
import { backendPid, waitingOn } from '../../testing-fixtures/lock-waits';
import { openRootFrame } from '../../testing-fixtures/root-frame';

jest.setTimeout(60_000);

type Moment = 'none' | 'before' | 'racing, stop first' | 'racing, commit first' | 'after';
const MOMENTS: Moment[] = ['none', 'before', 'racing, stop first', 'racing, commit first', 'after'];

/**
 * The driver clears a /stop after a turn only when the turn's finishing commit did not say "no
 * stop" (`stopAtFinish() !== false`). That skip is exact: for a stop asked at every moment around
 * the finishing one-statement commit — none, before it, racing it (either holding the session row
 * first), after it — `stopAtFinish()` is false only when no stop is recorded afterwards, so the
 * clear it skips would have written nothing; when a stop is recorded it says true and the clear
 * runs as before. A finishing commit on the transaction path, or one that does not finish the
 * turn, says nothing (null: the driver clears as before).
 */
describe('PgSessionStore.stopAtFinish: a stop at any moment around the finishing commit', () => {
  let ds: DataSource;
  let turnState: TurnStateRepository;
  const owner = `stop-${randomUUID()}`;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 6 } });
    await ds.initialize();
    turnState = new TurnStateRepository(ds);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  /** A session whose turn is running under this store's lease, with its root frame. */
  async function runningTurn() {
    const sessionId = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [sessionId, randomUUID()]);
    await ds.query(
      `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + interval '1 hour')`,
      [sessionId, owner],
    );
    const store = new PgSessionStore(ds, { owner, epoch: 1 }, () => undefined);
    const frameId = randomUUID();
    await store.commit(
      sessionId,
      [openRootFrame(sessionId, frameId), { kind: 'setTurnState', sessionId, state: 'running', turnId: randomUUID() }],
      [],
    );
    const finishing = (): Mutation[] => [
      {
        kind: 'appendMessage',
        message: {
          id: randomUUID(),
          sessionId,
          frameId,
          role: 'assistant',
          content: 'the answer',
          reasoningContent: null,
          isSynthetic: false,
          attachments: null,
          clientMessageId: null,
          inputTokens: 1,
          outputTokens: 1,
          createdAt: new Date().toISOString(),
        },
      },
      { kind: 'setTurnState', sessionId, state: 'finished' },
    ];
    return { sessionId, store, finishing };
  }

  const recorded = async (sessionId: string): Promise<boolean> => turnState.stopRequested(sessionId);

  for (const moment of MOMENTS) {
    it(`stop ${moment}: stopAtFinish is false only when no stop is recorded`, async () => {
      const { sessionId, store, finishing } = await runningTurn();
      let asked: boolean | null = null;
      if (moment === 'before') asked = await turnState.requestStop(sessionId);
      if (moment === 'racing, stop first') {
        // The stop's UPDATE holds the session row; the commit waits for it, then sees the stop.
        const qr = ds.createQueryRunner();
        await qr.startTransaction();
        const pid = await backendPid(qr);
        const r = await queryRows<{ id: string }>(
          qr,
          `UPDATE sessions SET stop_requested_at = now(), updated_at = now() WHERE id = $1 AND turn_state <> 'finished' RETURNING id`,
          [sessionId],
        );
        asked = r.length > 0;
        const commit = store.commit(sessionId, finishing(), []);
        await waitingOn(ds, pid, 1);
        await qr.commitTransaction();
        await qr.release();
        await commit;
      } else if (moment === 'racing, commit first') {
        // Another holder of the row lets the commit through first, the stop queued behind it.
        const qr = ds.createQueryRunner();
        await qr.startTransaction();
        const pid = await backendPid(qr);
        await qr.query(`SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, [sessionId]);
        const commit = store.commit(sessionId, finishing(), []);
        await waitingOn(ds, pid, 1);
        const stop = turnState.requestStop(sessionId);
        await waitingOn(ds, pid, 2);
        await qr.commitTransaction();
        await qr.release();
        await commit;
        asked = await stop;
      } else {
        await store.commit(sessionId, finishing(), []);
      }
      if (moment === 'after') asked = await turnState.requestStop(sessionId);

      const isRecorded = await recorded(sessionId);
      expect(store.stopAtFinish()).toBe(isRecorded);
      // Whichever order the race took, the stop was recorded exactly when it was accepted.
      expect(isRecorded).toBe(asked === true);
      if (moment === 'none' || moment === 'after') expect(store.stopAtFinish()).toBe(false);
      if (moment === 'before') expect(store.stopAtFinish()).toBe(true);
      // A stop asked later still is refused: nothing can be recorded for this finished turn.
      expect(await turnState.requestStop(sessionId)).toBe(false);
      expect(await recorded(sessionId)).toBe(isRecorded);
    });
  }

  it('a finishing commit on the transaction path, or one that does not finish, says nothing', async () => {
    const a = await runningTurn();
    await turnState.requestStop(a.sessionId);
    // A scratchpad write takes the transaction path (fitsOneStatement).
    await a.store.commit(
      a.sessionId,
      [
        { kind: 'setScratchpad', scratchpadSessionId: a.sessionId, key: 'k', value: 'v' },
        { kind: 'setTurnState', sessionId: a.sessionId, state: 'finished' },
      ],
      [],
    );
    expect(a.store.stopAtFinish()).toBeNull();
    const b = await runningTurn();
    await b.store.commit(b.sessionId, [b.finishing()[0]], []);
    expect(b.store.stopAtFinish()).toBeNull();
    // A failed commit says nothing either.
    const c = await runningTurn();
    await c.store.commit(c.sessionId, c.finishing(), []);
    expect(c.store.stopAtFinish()).toBe(false);
    await expect(c.store.commit(c.sessionId, [{ kind: 'consumeInbox', inboxId: randomUUID() }], [])).rejects.toThrow();
    expect(c.store.stopAtFinish()).toBeNull();
  });
});
