import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { Mutation } from '@skald/agent-loop';
import { PgSessionStore } from './pg-session-store';
import { fitsOneStatement } from './one-statement-commit';
import { openRootFrame } from '../../testing-fixtures/root-frame';
import { plainMessage } from '../../testing-fixtures/plain-message';

jest.setTimeout(60_000);

/**
 * The landing a human is asked about (`judgedLanding`) is written with the `awaiting_human` commit
 * and survives a reload from Postgres — by the one statement and by the transaction, read back by a
 * fresh store (a restarted worker) through every read a resumed call takes.
 */
describe('PgSessionStore: a call keeps the landing its approval was judged on', () => {
  let ds: DataSource;
  const owner = `landing-${randomUUID()}`;
  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  // A path with the codec's hard cases (NUL, a lone surrogate) and an unresolved entry.
  const landing = ['/workspace/real/notes.md', null, '/workspace/odd\u0000\ud800'];

  it.each([
    ['one statement', false],
    ['transaction', true],
  ])('%s: written with awaiting_human, read back after a restart, cleared by a patch', async (_, viaTransaction) => {
    const sessionId = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [sessionId, randomUUID()]);
    await ds.query(
      `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + interval '1 hour')`,
      [sessionId, owner],
    );
    const fence = { owner, epoch: 1 };
    const store = new PgSessionStore(ds, fence, () => undefined);
    const frameId = randomUUID();
    const messageId = randomUUID();
    const callId = randomUUID();
    await store.commit(
      sessionId,
      [
        openRootFrame(sessionId, frameId),
        {
          kind: 'appendMessage',
          message: { ...plainMessage(sessionId, frameId, 'assistant', '', new Date().toISOString()), id: messageId },
        },
        {
          kind: 'createToolCall',
          call: {
            id: callId,
            sessionId,
            frameId,
            messageId,
            index: 0,
            llmCallId: 'c0',
            name: 'write_file',
            argumentsText: '{}',
            status: 'pending',
            result: null,
            resultType: null,
            requestId: null,
            childFrameId: null,
          },
        },
      ],
      [],
    );
    await store.listToolCalls(frameId); // cached
    const ask: Mutation[] = [
      {
        kind: 'updateToolCall',
        id: callId,
        patch: { status: 'awaiting_human', requestId: randomUUID(), previewHash: 'h', judgedLanding: landing },
      },
    ];
    // A grant of no group changes nothing and takes the transaction path (fitsOneStatement).
    if (viaTransaction) ask.push({ kind: 'grantTools', scope: { kind: 'frame', frameId }, groups: [] });
    expect(fitsOneStatement(ask)).toBe(!viaTransaction);
    await store.commit(sessionId, ask, []);

    expect((await store.listToolCalls(frameId))[0].judgedLanding).toEqual(landing);
    const restarted = new PgSessionStore(ds, fence, () => undefined);
    expect((await restarted.getToolCall(callId))?.judgedLanding).toEqual(landing);
    expect((await restarted.listToolCalls(frameId))[0].judgedLanding).toEqual(landing);
    // The turn start reads a session's frames when it has work: a running turn (a resumed one).
    await ds.query(`UPDATE sessions SET turn_state = 'running' WHERE id = $1`, [sessionId]);
    const start = await new PgSessionStore(ds, fence, () => undefined).startTurn(sessionId);
    expect(start.toolCalls.get(frameId)?.[0]).toMatchObject({ status: 'awaiting_human', judgedLanding: landing });

    // A status change leaves it; a patch of null clears it.
    await store.commit(sessionId, [{ kind: 'updateToolCall', id: callId, patch: { status: 'running' } }], []);
    expect((await new PgSessionStore(ds, fence, () => undefined).getToolCall(callId))?.judgedLanding).toEqual(landing);
    await store.commit(
      sessionId,
      [{ kind: 'updateToolCall', id: callId, patch: { status: 'done', judgedLanding: null } }],
      [],
    );
    expect((await store.getToolCall(callId))?.judgedLanding).toBeNull();
    expect((await new PgSessionStore(ds, fence, () => undefined).getToolCall(callId))?.judgedLanding).toBeNull();
  });
});
