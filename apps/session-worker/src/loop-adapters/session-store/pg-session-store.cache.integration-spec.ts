import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import type { Mutation, ToolCallPatch, ToolCallStatus } from '@skald/agent-loop';
import { ToolCallStatus as ToolCallStatusEnum } from '@skald/contracts';
import { PgSessionStore } from './pg-session-store';
import { openRootFrame } from '../../testing-fixtures/root-frame';
import { plainMessage } from '../../testing-fixtures/plain-message';
import { toolCallPatchFields } from '../../testing-fixtures/tool-call-patch';

jest.setTimeout(120_000);

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = 40;

const text = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: fc.constantFrom('\u0000', '\ud800', 'x', '\\', '"'), maxLength: 8 }),
);
// Every status a tool call can have (the contract's enum, so a new one is generated too).
const statuses: ToolCallStatus[] = [...ToolCallStatusEnum.options];

/** One step of a turn, as the loop would commit it (ids picked from what exists when applied). */
const step = fc.oneof(
  fc.record({ k: fc.constant('message' as const), role: fc.constantFrom('user', 'assistant'), content: text }),
  fc.record({ k: fc.constant('fail' as const), pick: fc.nat() }),
  fc.record({ k: fc.constant('call' as const), name: text, args: text, pick: fc.nat() }),
  fc.record({
    k: fc.constant('update' as const),
    pick: fc.nat(),
    ...toolCallPatchFields(text, statuses),
  }),
  fc.record({ k: fc.constant('scratch' as const), key: fc.constantFrom('a', 'b'), value: fc.option(text) }),
  fc.record({ k: fc.constant('grant' as const), group: fc.constantFrom('fs', 'web', 'git') }),
);

/**
 * The lease holder's cache (SessionCache) answers exactly what Postgres holds: a store that read,
 * committed and read again through random steps answers every read like a fresh store that reads
 * everything from the tables.
 */
describe('PgSessionStore: cached reads equal the tables', () => {
  let ds: DataSource;
  const owner = `cache-${randomUUID()}`;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
    console.log(`store cache: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  it('after any sequence of commits, every cached read equals a read of the tables', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        const sessionId = randomUUID();
        await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [sessionId, randomUUID()]);
        await ds.query(
          `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + interval '1 hour')`,
          [sessionId, owner],
        );
        const fence = { owner, epoch: 1 };
        const store = new PgSessionStore(ds, fence, () => undefined);
        const frameId = randomUUID();
        await store.commit(sessionId, [openRootFrame(sessionId, frameId)], []);
        const scope = { kind: 'session' as const, sessionId };
        const reads = async (s: PgSessionStore, after: string | null) => ({
          messages: await s.listMessages(frameId),
          all: await s.listMessages(frameId, { includeFailed: true }),
          after: after ? await s.listMessages(frameId, { afterMessageId: after }) : null,
          calls: await s.listToolCalls(frameId),
          grants: await s.getGrants(scope),
          scratchpad: await s.getScratchpad(sessionId),
        });
        await reads(store, null);
        const messages: string[] = [];
        const calls: string[] = [];
        for (const st of steps) {
          let m: Mutation | null = null;
          switch (st.k) {
            case 'message': {
              const id = randomUUID();
              messages.push(id);
              m = {
                kind: 'appendMessage',
                message: {
                  id,
                  sessionId,
                  frameId,
                  role: st.role,
                  content: st.content,
                  reasoningContent: null,
                  isSynthetic: false,
                  attachments: null,
                  clientMessageId: null,
                  inputTokens: 3,
                  outputTokens: null,
                  createdAt: new Date().toISOString(),
                },
              };
              break;
            }
            case 'fail':
              if (messages.length > 0)
                m = { kind: 'markMessageFailed', messageId: messages[st.pick % messages.length] };
              break;
            case 'call': {
              if (messages.length === 0) break;
              const id = randomUUID();
              calls.push(id);
              m = {
                kind: 'createToolCall',
                call: {
                  id,
                  sessionId,
                  frameId,
                  messageId: messages[st.pick % messages.length],
                  index: calls.length,
                  llmCallId: `call_${id}`,
                  name: st.name,
                  argumentsText: st.args,
                  status: 'pending',
                  result: null,
                  resultType: null,
                  requestId: null,
                  childFrameId: null,
                },
              };
              break;
            }
            case 'update': {
              if (calls.length === 0) break;
              const patch: ToolCallPatch = { status: st.status };
              if (st.result !== null) patch.result = st.result;
              if (st.resultType !== null) patch.resultType = st.resultType;
              if (st.requestId !== null) patch.requestId = st.requestId;
              if (st.previewHash !== null) patch.previewHash = st.previewHash;
              if (st.staleReasks !== null) patch.staleReasks = st.staleReasks;
              if (st.judgedLanding !== null) patch.judgedLanding = st.judgedLanding;
              m = { kind: 'updateToolCall', id: calls[st.pick % calls.length], patch };
              break;
            }
            case 'scratch':
              m = { kind: 'setScratchpad', scratchpadSessionId: sessionId, key: st.key, value: st.value };
              break;
            case 'grant':
              m = { kind: 'grantTools', scope, groups: [st.group] };
              break;
          }
          if (m) await store.commit(sessionId, [m], []);
          await reads(store, messages[0] ?? null);
        }
        const after = messages[Math.floor(messages.length / 2)] ?? null;
        const fresh = new PgSessionStore(ds, fence, () => undefined);
        expect(await reads(store, after)).toEqual(await reads(fresh, after));
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });
  it('a frame opened by a commit is cached as empty plus what that commit (and later ones) wrote to it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ role: fc.constantFrom('user', 'assistant'), content: text, withCall: fc.boolean() }), {
          maxLength: 4,
        }),
        fc.array(fc.record({ role: fc.constantFrom('user', 'assistant'), content: text }), { maxLength: 3 }),
        async (first, later) => {
          const sessionId = randomUUID();
          await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [
            sessionId,
            randomUUID(),
          ]);
          await ds.query(
            `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + interval '1 hour')`,
            [sessionId, owner],
          );
          const fence = { owner, epoch: 1 };
          const store = new PgSessionStore(ds, fence, () => undefined);
          const frameId = randomUUID();
          const message = (m: { role: string; content: string }): Mutation => ({
            kind: 'appendMessage',
            message: plainMessage(sessionId, frameId, m.role as 'user' | 'assistant', m.content),
          });
          // The frame, its first messages and calls in ONE commit (as a turn's first commit opens the root frame).
          const opening: Mutation[] = [openRootFrame(sessionId, frameId)];
          for (const [i, m] of first.entries()) {
            const msg = message(m);
            opening.push(msg);
            if (m.withCall && msg.kind === 'appendMessage')
              opening.push({
                kind: 'createToolCall',
                call: {
                  id: randomUUID(),
                  sessionId,
                  frameId,
                  messageId: msg.message.id,
                  index: i,
                  llmCallId: `call_${i}`,
                  name: 'read_file',
                  argumentsText: '{}',
                  status: 'pending',
                  result: null,
                  resultType: null,
                  requestId: null,
                  childFrameId: null,
                },
              });
          }
          await store.commit(sessionId, opening, []);
          for (const m of later) await store.commit(sessionId, [message(m)], []);
          const fresh = new PgSessionStore(ds, fence, () => undefined);
          const reads = async (s: PgSessionStore) => ({
            all: await s.listMessages(frameId, { includeFailed: true }),
            calls: await s.listToolCalls(frameId),
            compaction: await s.getCompaction(frameId),
          });
          expect(await reads(store)).toEqual(await reads(fresh));
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
  });
});
