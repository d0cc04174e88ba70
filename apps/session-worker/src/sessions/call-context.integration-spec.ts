import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { Mutation, NewMessage } from '@skald/agent-loop';
import { CONTEXT_EXCERPT_MAX } from '@skald/contracts';
import { PgSessionStore } from '../loop-adapters/session-store/pg-session-store';
import { openRootFrame } from '../testing-fixtures/root-frame';
import { CallContextRepository, excerptOf } from './call-context.repository';
import { SessionsRepository } from './sessions.repository';

jest.setTimeout(60_000);

/**
 * What the inbox shows of a call's conversation, on real Postgres: the title, the agent and the
 * end of the last assistant text up to the call's own message (never a later one, never another
 * frame's), for the caller's sessions only (an admin's: any).
 */
describe('CallContextRepository', () => {
  let ds: DataSource;
  let repo: SessionsRepository;
  let calls: CallContextRepository;
  const owner = `call-context-${randomUUID()}`;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
    repo = new SessionsRepository(ds);
    calls = new CallContextRepository(ds);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  async function session(userId: string) {
    const { id: sessionId } = await repo.active({ userId, source: 'web' });
    await ds.query(
      `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + interval '1 hour')`,
      [sessionId, owner],
    );
    const store = new PgSessionStore(ds, { owner, epoch: 1 }, () => undefined);
    const frameId = randomUUID();
    await store.commit(sessionId, [openRootFrame(sessionId, frameId)], []);
    const message = (m: Partial<NewMessage>): NewMessage => ({
      id: randomUUID(),
      sessionId,
      frameId,
      role: 'assistant',
      content: '',
      reasoningContent: null,
      isSynthetic: false,
      attachments: null,
      clientMessageId: null,
      inputTokens: null,
      outputTokens: null,
      createdAt: new Date().toISOString(),
      ...m,
    });
    const call = (messageId: string): Mutation & { kind: 'createToolCall' } => ({
      kind: 'createToolCall',
      call: {
        id: randomUUID(),
        sessionId,
        frameId,
        messageId,
        index: 0,
        llmCallId: `call_${randomUUID()}`,
        name: 'execute_cmd',
        argumentsText: '{"command":"ls"}',
        status: 'awaiting_human',
        result: null,
        resultType: null,
        requestId: null,
        childFrameId: null,
      },
    });
    return { sessionId, store, message, call };
  }

  it("reads the title, the agent and the last assistant words up to the call, for the caller's sessions only", async () => {
    const alice = randomUUID();
    const s = await session(alice);
    await ds.query(`UPDATE sessions SET title = 'Nightly stamp' WHERE id = $1`, [s.sessionId]);
    const said = s.message({ content: 'I will list the files first.' });
    // the call's own message says nothing: the words before it are the previous assistant row's
    const silent = s.message({ content: '' });
    const first = s.call(silent.id);
    const later = s.message({ content: 'this came after the call' });
    const long = s.message({ content: `${'x'.repeat(500)} and the end of it` });
    const second = s.call(long.id);
    await s.store.commit(
      s.sessionId,
      [
        { kind: 'appendMessage', message: s.message({ role: 'user', content: 'please list' }) },
        { kind: 'appendMessage', message: said },
        { kind: 'appendMessage', message: silent },
        first,
        { kind: 'appendMessage', message: later },
        { kind: 'appendMessage', message: long },
        second,
      ],
      [],
    );
    const asked = [
      { session_id: s.sessionId, tool_call_id: first.call.id },
      { session_id: s.sessionId, tool_call_id: second.call.id },
      { session_id: s.sessionId },
    ];
    const rows = await calls.read(alice, asked);
    expect(rows.map((r) => [r.title, r.tool_call_id, excerptOf(r.said)])).toEqual([
      ['Nightly stamp', first.call.id, 'I will list the files first.'],
      ['Nightly stamp', second.call.id, expect.stringMatching(/^…x+ and the end of it$/)],
      ['Nightly stamp', null, undefined],
    ]);
    expect([...excerptOf(rows[1].said)!]).toHaveLength(CONTEXT_EXCERPT_MAX);
    expect(rows[0].agent_id).toEqual(expect.any(String));
    // another user learns nothing; an admin (scope null) reads it
    expect(await calls.read(randomUUID(), asked)).toEqual([]);
    expect(await calls.read(null, asked)).toHaveLength(3);
    // a call id of another session is not read through this one
    expect(
      (await calls.read(alice, [{ session_id: randomUUID(), tool_call_id: first.call.id }])).map((r) => r.said),
    ).toEqual([]);
  });
});
