import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import type { Mutation, NewMessage, SessionEventDraft, ToolCallRow } from '@skald/agent-loop';
import { SessionsRepository } from '../../sessions/sessions.repository';
import type { CommittedEvent } from './committed-event';
import { CommitRejectedError } from './fence';
import { PgSessionStore } from './pg-session-store';
import { openRootFrame } from '../../testing-fixtures/root-frame';

jest.setTimeout(60_000);

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = 150;

/** Any UTF-16 string, with NUL, lone surrogates and the codec's own mark well represented. */
const poison = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom('\u0000', '\ud800', '\udfff', '\uffff', 'x', '\\', '"'), maxLength: 12 }),
);

/**
 * The session store on real Postgres: every string a model, a tool or a user can produce is
 * committed and read back exactly (chat rows, tool calls, events, inbox, scratchpad, todos), and a
 * commit Postgres refuses for its data surfaces as `CommitRejectedError`.
 */
describe('PgSessionStore: poison strings', () => {
  let ds: DataSource;
  const owner = `poison-${randomUUID()}`;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
    console.log(`store poison: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  async function session(): Promise<{ store: PgSessionStore; sessionId: string; announced: CommittedEvent[] }> {
    const sessionId = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [sessionId, randomUUID()]);
    await ds.query(
      `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + interval '1 hour')`,
      [sessionId, owner],
    );
    const announced: CommittedEvent[] = [];
    return { store: new PgSessionStore(ds, { owner, epoch: 1 }, (e) => announced.push(...e)), sessionId, announced };
  }

  it('commits and reads back any string in every field the loop writes', async () => {
    const { store, sessionId } = await session();
    const frameId = randomUUID();
    await store.commit(sessionId, [openRootFrame(sessionId, frameId)], []);
    const repo = new SessionsRepository(ds);
    let cases = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          content: poison,
          reasoning: poison,
          clientId: poison,
          name: poison,
          llmCallId: poison,
          args: poison,
          result: poison,
          note: poison,
          todo: poison,
        }),
        async (v) => {
          cases++;
          const messageId = randomUUID();
          const callId = randomUUID();
          const message: NewMessage = {
            id: messageId,
            sessionId,
            frameId,
            role: 'assistant',
            content: v.content,
            reasoningContent: v.reasoning,
            isSynthetic: false,
            attachments: [{ path: v.note, name: v.note || 'n' }],
            clientMessageId: v.clientId,
            inputTokens: null,
            outputTokens: null,
            createdAt: new Date().toISOString(),
          };
          const call: ToolCallRow = {
            id: callId,
            sessionId,
            frameId,
            messageId,
            index: 0,
            llmCallId: v.llmCallId,
            name: v.name,
            argumentsText: v.args,
            status: 'pending',
            result: null,
            resultType: null,
            requestId: null,
            childFrameId: null,
          };
          const events: SessionEventDraft[] = [
            { type: 'thinking', message_id: messageId, content: v.content, reasoning_content: v.reasoning },
            {
              type: 'tool_start',
              tool_call_id: callId,
              message_id: messageId,
              name: v.name,
              arguments: { [v.note]: v.args },
              label_short: v.name,
              label_full: v.name,
            },
          ];
          const mutations: Mutation[] = [
            { kind: 'appendMessage', message },
            { kind: 'createToolCall', call },
            { kind: 'updateToolCall', id: callId, patch: { status: 'done', result: v.result, resultType: v.note } },
            { kind: 'setScratchpad', scratchpadSessionId: sessionId, key: v.note, value: v.todo },
            { kind: 'setTodos', sessionId, frameId, todos: [{ content: v.todo, status: 'pending' }] },
          ];
          const before = Number(
            (await ds.query(`SELECT last_seq FROM sessions WHERE id = $1`, [sessionId]))[0].last_seq,
          );
          await store.commit(sessionId, mutations, events);

          const m = (await store.listMessages(frameId)).find((x) => x.id === messageId);
          expect(m).toMatchObject({ content: v.content, reasoningContent: v.reasoning, clientMessageId: v.clientId });
          expect(m?.attachments).toEqual([{ path: v.note, name: v.note || 'n' }]);
          expect(await store.getToolCall(callId)).toMatchObject({
            name: v.name,
            llmCallId: v.llmCallId,
            argumentsText: v.args,
            result: v.result,
            resultType: v.note,
          });
          expect((await store.getScratchpad(sessionId)).find((n) => n.key === v.note)?.value).toBe(v.todo);
          expect(await store.getTodos(frameId)).toEqual([{ content: v.todo, status: 'pending' }]);
          const replay = await repo.eventsAfter(sessionId, before, Number.MAX_SAFE_INTEGER, 1_000);
          expect(replay.map((r) => r.payload)).toEqual(events);
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
    expect(cases).toBe(RUNS);
  });

  it('the inbox keeps a user message and its client id exactly', async () => {
    const { store, sessionId } = await session();
    const text = 'a\u0000b\ud800c\uffff';
    await ds.query(
      `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery)
       SELECT $1, id, user_id, $2, $3, 'steer' FROM sessions WHERE id = $4`,
      [randomUUID(), '\uffff"x\\u0000"', '\uffff"a\\u0000b\\ud800c\\uffff"', sessionId],
    );
    const [item] = await store.listInbox(sessionId);
    expect(item.content).toBe(text);
    expect(item.clientMessageId).toBe('x\u0000');
  });

  it('a commit Postgres refuses for its data is a CommitRejectedError, nothing of it is kept', async () => {
    const { store, sessionId, announced } = await session();
    const err = await store
      .commit(sessionId, [{ kind: 'markMessageFailed', messageId: 'not-a-uuid' }], [{ type: 'truncated' }])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommitRejectedError);
    expect((err as CommitRejectedError).sqlState).toBe('22P02');
    expect((await ds.query(`SELECT last_seq FROM sessions WHERE id = $1`, [sessionId]))[0].last_seq).toBe('0');
    expect(announced).toEqual([]);
  });
});
