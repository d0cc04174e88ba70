import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { deepToPgText, pgParams } from '@skald/persistence/pg-text';
import {
  inboxEntry,
  LeaseLostError,
  userMessageEvent,
  type Mutation,
  type SessionEventDraft,
  type ToolCallStatus,
} from '@skald/agent-loop';
import { JobSessionsRepository } from '../../jobs/job-sessions.repository';
import { LlmUsageRepository } from '../../llm/llm-usage.repository';
import { fitsOneStatement, oneStatementCommit, shapeName } from './one-statement-commit';
import { PgSessionStore } from './pg-session-store';
import { openRootFrame } from '../../testing-fixtures/root-frame';
import { backendPid, waitingOn } from '../../testing-fixtures/lock-waits';
import { plainMessage } from '../../testing-fixtures/plain-message';
import { toolCallPatchFields } from '../../testing-fixtures/tool-call-patch';
import {
  allShapes,
  commitOfShape,
  pendingReadFile,
  usageOf,
  type ShapeContext,
} from '../../testing-fixtures/commit-shapes';

jest.setTimeout(180_000);

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.FC_RUNS ?? 60);

const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: fc.constantFrom('\u0000', '\ud800', '\udc00', '\uffff', 'x', '\\', '"', "'", ','), maxLength: 8 }),
);
const statuses: ToolCallStatus[] = ['pending', 'running', 'awaiting_human', 'done', 'failed', 'cancelled'];

/** One commit of a turn, by what it carries (ids are resolved against what exists when applied). */
const commitSpec = fc.record({
  messages: fc.array(
    fc.record({
      role: fc.constantFrom('user' as const, 'assistant' as const),
      content: text,
      reasoning: fc.option(text),
      tokens: fc.option(fc.nat({ max: 10_000 })),
      cost: fc.option(fc.double({ min: 0, max: 1, noNaN: true })),
      attachments: fc.boolean(),
    }),
    { maxLength: 2 },
  ),
  calls: fc.array(fc.record({ name: text, args: text, status: fc.constantFrom(...statuses) }), { maxLength: 3 }),
  updates: fc.array(
    fc.record({
      pick: fc.nat(),
      ...toolCallPatchFields(text, statuses),
    }),
    { maxLength: 3 },
  ),
  turn: fc.option(fc.constantFrom('running' as const, 'parked' as const, 'finished' as const)),
  events: fc.array(text, { maxLength: 3 }),
  /** A delegation: a child frame opened (its client pin) with the sub-agent's prompt in it. */
  child: fc.option(fc.record({ pin: fc.option(text), prompt: text })),
});

/**
 * The one-statement commit (one-statement-commit.ts) against the transaction it replaces: the
 * same commits give the same rows, events and seqs (text with NUL, lone surrogates and the codec's
 * mark included); a fenced-out writer writes nothing — message, calls, usage, events, seq; the
 * usage row of an answered call is in the ledger exactly once whatever happens to its commit; and
 * the queued inbox a commit returns is what the round boundary reads.
 */
describe('PgSessionStore: one-statement commits', () => {
  let ds: DataSource;
  const owner = `one-${randomUUID()}`;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 3 } });
    await ds.initialize();
    console.log(`store one-statement: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  async function session(usage: LlmUsageRepository | null = null) {
    const sessionId = randomUUID();
    const userId = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [sessionId, userId]);
    await ds.query(
      `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + interval '1 hour')`,
      [sessionId, owner],
    );
    const announced: number[] = [];
    const store = new PgSessionStore(ds, { owner, epoch: 1 }, (ev) => announced.push(...ev.map((e) => e.seq)), usage);
    const frameId = randomUUID();
    await store.commit(sessionId, [openRootFrame(sessionId, frameId)], []);
    return { sessionId, userId, frameId, store, announced };
  }

  /** What a session holds, without what differs by construction (ids, ord, clock columns). */
  async function contents(sessionId: string) {
    const messages = await ds.query<Array<Record<string, unknown>>>(
      `SELECT role, content, reasoning, is_synthetic, status, metadata, client_message_id, input_tokens, output_tokens,
              epoch, cost_usd, tokens_estimated, llm_client, llm_model
         FROM chat_history WHERE session_id = $1 ORDER BY ord`,
      [sessionId],
    );
    const calls = await ds.query<Array<Record<string, unknown>>>(
      `SELECT t.idx, t.llm_call_id, t.name, t.arguments, t.status, t.result, t.result_type, t.request_id,
              t.preview_hash, t.stale_reasks, t.judged_landing, t.epoch, (t.started_at IS NULL) AS not_started,
              (t.finished_at IS NULL) AS not_finished
         FROM tool_calls t WHERE t.session_id = $1 ORDER BY t.ord`,
      [sessionId],
    );
    const events = await ds.query<Array<Record<string, unknown>>>(
      `SELECT seq::int, type, payload FROM session_events WHERE session_id = $1 ORDER BY seq`,
      [sessionId],
    );
    const [head] = await ds.query<Array<Record<string, unknown> & { turn_id: string | null }>>(
      `SELECT last_seq::int, turn_state, turn_id, turn_seq::int FROM sessions WHERE id = $1`,
      [sessionId],
    );
    const frames = await ds.query<Array<Record<string, unknown>>>(
      `SELECT (parent_frame_id IS NULL) AS root, (parent_tool_call_id IS NULL) AS no_call, agent_id, depth, status,
              client, epoch
         FROM stack_frames WHERE session_id = $1 ORDER BY ord`,
      [sessionId],
    );
    return { messages, calls, events, frames, head: { ...head, turn_id: head.turn_id === null ? null : 'set' } };
  }

  it('gives the same rows, events and seqs as the transaction it replaces', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(commitSpec, { minLength: 1, maxLength: 6 }), async (specs) => {
        const fast = await session();
        const slow = await session();
        const callIds = { fast: [] as string[], slow: [] as string[] };
        for (const spec of specs) {
          for (const [s, ids, forceTransaction] of [
            [fast, callIds.fast, false],
            [slow, callIds.slow, true],
          ] as const) {
            const mutations: Mutation[] = [];
            const messageIds: string[] = [];
            for (const m of spec.messages) {
              const id = randomUUID();
              messageIds.push(id);
              mutations.push({
                kind: 'appendMessage',
                message: {
                  id,
                  sessionId: s.sessionId,
                  frameId: s.frameId,
                  role: m.role,
                  content: m.content,
                  reasoningContent: m.reasoning,
                  isSynthetic: false,
                  attachments: m.attachments ? [{ path: m.content, name: m.content, filesize: 3 }] : null,
                  clientMessageId: m.reasoning,
                  inputTokens: m.tokens,
                  outputTokens: m.tokens,
                  costUsd: m.cost,
                  tokensEstimated: m.tokens === null,
                  llmClient: m.reasoning,
                  llmModel: m.content,
                  createdAt: '2026-01-02T03:04:05.678Z',
                },
              });
            }
            const before = [...ids];
            const updated = new Set<string>();
            for (const u of spec.updates) {
              if (before.length === 0) break;
              const id = before[u.pick % before.length];
              if (updated.has(id)) continue;
              updated.add(id);
              mutations.push({
                kind: 'updateToolCall',
                id,
                patch: {
                  status: u.status,
                  ...(u.result !== null ? { result: u.result } : {}),
                  ...(u.resultType !== null ? { resultType: u.resultType } : {}),
                  ...(u.requestId !== null ? { requestId: u.requestId } : {}),
                  ...(u.previewHash !== null ? { previewHash: u.previewHash } : {}),
                  ...(u.staleReasks !== null ? { staleReasks: u.staleReasks } : {}),
                  ...(u.judgedLanding !== null ? { judgedLanding: u.judgedLanding } : {}),
                },
              });
            }
            if (messageIds.length > 0) {
              spec.calls.forEach((c, index) => {
                const id = randomUUID();
                ids.push(id);
                mutations.push({
                  kind: 'createToolCall',
                  call: {
                    id,
                    sessionId: s.sessionId,
                    frameId: s.frameId,
                    messageId: messageIds[messageIds.length - 1],
                    index,
                    llmCallId: c.name,
                    name: c.name,
                    argumentsText: c.args,
                    status: c.status,
                    result: c.args,
                    resultType: null,
                    requestId: null,
                    childFrameId: null,
                  },
                });
              });
            }
            if (spec.child) {
              const childId = randomUUID();
              mutations.push(
                {
                  kind: 'openFrame',
                  frame: {
                    id: childId,
                    sessionId: s.sessionId,
                    parentFrameId: s.frameId,
                    parentToolCallId: ids[ids.length - 1] ?? null,
                    agentId: spec.child.prompt,
                    depth: 1,
                    status: 'active',
                    clientPin: spec.child.pin,
                  },
                },
                {
                  kind: 'appendMessage',
                  message: plainMessage(s.sessionId, childId, 'agent', spec.child.prompt, '2026-01-02T03:04:05.678Z'),
                },
              );
            }
            if (spec.turn)
              mutations.push({ kind: 'setTurnState', sessionId: s.sessionId, state: spec.turn, turnId: messageIds[0] });
            // A grant of no group changes nothing and takes the transaction path (fitsOneStatement).
            if (forceTransaction)
              mutations.push({ kind: 'grantTools', scope: { kind: 'frame', frameId: s.frameId }, groups: [] });
            expect(fitsOneStatement(mutations)).toBe(!forceTransaction);
            const events: SessionEventDraft[] = spec.events.map((content) => ({
              type: 'thinking',
              message_id: 'm',
              content,
            }));
            await s.store.commit(s.sessionId, mutations, events);
          }
        }
        expect(await contents(fast.sessionId)).toEqual(await contents(slow.sessionId));
        expect(fast.announced).toEqual(slow.announced);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('every shape the store sends writes what the transaction writes, and nothing when fenced out', async () => {
    /** A session with a message, three pending calls and two queued inbox items. */
    const prepared = async (): Promise<
      Awaited<ReturnType<typeof session>> & ShapeContext & { usage: LlmUsageRepository }
    > => {
      const usage = new LlmUsageRepository(ds);
      const s = { ...(await session(usage)), usage };
      const messageId = randomUUID();
      const [mutations] = answer(s, messageId);
      const callIds = [randomUUID(), randomUUID(), randomUUID()];
      const calls = callIds.map((id, index): Mutation => {
        const [first] = mutations.filter((m) => m.kind === 'createToolCall');
        if (first.kind !== 'createToolCall') throw new Error('no call');
        return { kind: 'createToolCall', call: { ...first.call, id, index } };
      });
      await s.store.commit(s.sessionId, [...mutations.filter((m) => m.kind !== 'createToolCall'), ...calls], []);
      const inboxIds = [randomUUID(), randomUUID()];
      for (const id of inboxIds)
        await ds.query(
          `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery, is_synthetic)
           VALUES ($1, $2, $3, $4, 'queued', 'steer', false)`,
          [id, s.sessionId, s.userId, randomUUID()],
        );
      return { ...s, messageId, callIds, inboxIds };
    };
    const counts = async (sessionId: string) => {
      const [n] = await ds.query<Array<{ usage: number; queued: number }>>(
        `SELECT (SELECT count(*) FROM llm_usage WHERE session_id = $1)::int AS usage,
                (SELECT count(*) FROM session_inbox WHERE session_id = $1 AND status = 'queued')::int AS queued`,
        [sessionId],
      );
      return n;
    };
    const names = new Set<string>();
    for (const shape of allShapes()) {
      const fast = await prepared();
      const slow = await prepared();
      for (const [s, forceTransaction] of [
        [fast, false],
        [slow, true],
      ] as const) {
        const { mutations, events, usage } = commitOfShape(shape, s, 2);
        for (const u of usage) await s.usage.record(u);
        if (forceTransaction)
          mutations.push({ kind: 'grantTools', scope: { kind: 'frame', frameId: s.frameId }, groups: [] });
        else names.add(oneStatementCommit(s.sessionId, { owner, epoch: 1 }, mutations, events, usage).name);
        expect(fitsOneStatement(mutations)).toBe(!forceTransaction);
        await s.store.commit(s.sessionId, mutations, events);
        expect(s.store.queuedAtLastCommit()?.length).toBe(shape.includes('i') ? 0 : 2);
      }
      const label = shapeName(new Set(shape));
      expect({ label, ...(await contents(fast.sessionId)), ...(await counts(fast.sessionId)) }).toEqual({
        label,
        ...(await contents(slow.sessionId)),
        ...(await counts(slow.sessionId)),
      });
      expect(fast.announced).toEqual(slow.announced);

      // Fenced out (the lease taken over): the same shape writes nothing and announces nothing.
      const before = { ...(await contents(fast.sessionId)), ...(await counts(fast.sessionId)) };
      const announced = fast.announced.length;
      await ds.query(`UPDATE session_leases SET owner = 'other', epoch = epoch + 1 WHERE session_id = $1`, [
        fast.sessionId,
      ]);
      const again = commitOfShape(shape, { ...fast, inboxIds: [randomUUID(), randomUUID()] }, 1);
      await expect(fast.store.commit(fast.sessionId, again.mutations, again.events)).rejects.toBeInstanceOf(
        LeaseLostError,
      );
      expect({ label, ...(await contents(fast.sessionId)), ...(await counts(fast.sessionId)) }).toEqual({
        label,
        ...before,
      });
      expect(fast.announced.length).toBe(announced);
    }
    expect(names.size).toBe(allShapes().length);
  });

  it('a fenced-out round commit writes nothing: message, calls, usage row, events, seq', async () => {
    const usage = new LlmUsageRepository(ds);
    const s = await session(usage);
    const messageId = randomUUID();
    await usage.record(usageOf(s, messageId));
    await ds.query(`UPDATE session_leases SET owner = 'other', epoch = epoch + 1 WHERE session_id = $1`, [s.sessionId]);
    await expect(s.store.commit(s.sessionId, ...answer(s, messageId))).rejects.toBeInstanceOf(LeaseLostError);
    const [n] = await ds.query<Array<Record<string, unknown>>>(
      `SELECT (SELECT count(*) FROM chat_history WHERE session_id = $1)::int AS messages,
              (SELECT count(*) FROM tool_calls WHERE session_id = $1)::int AS calls,
              (SELECT count(*) FROM llm_usage WHERE session_id = $1)::int AS usage,
              (SELECT count(*) FROM session_events WHERE session_id = $1)::int AS events,
              (SELECT last_seq FROM sessions WHERE id = $1)::int AS last_seq`,
      [s.sessionId],
    );
    expect(n).toEqual({ messages: 0, calls: 0, usage: 0, events: 0, last_seq: 0 });
    expect(s.announced).toEqual([]);
    // The answered call was paid for: its row waits again and is written alone (its message is not stored).
    await usage.beforeApplicationShutdown();
    expect(await usageRows(s.sessionId)).toBe(1);
  });

  it('the usage row of an answered call is written exactly once: with its commit, alone, or after an ambiguous commit', async () => {
    // With its message's commit, and never again.
    const usage = new LlmUsageRepository(ds);
    const a = await session(usage);
    const m1 = randomUUID();
    await usage.record(usageOf(a, m1));
    await a.store.commit(a.sessionId, ...answer(a, m1));
    expect(await usageRows(a.sessionId)).toBe(1);
    await usage.beforeApplicationShutdown();
    expect(await usageRows(a.sessionId)).toBe(1);

    // No commit of its message (the turn died after the answer): written alone.
    const usage2 = new LlmUsageRepository(ds);
    const b = await session(usage2);
    await usage2.record(usageOf(b, randomUUID()));
    expect(await usageRows(b.sessionId)).toBe(0);
    await usage2.beforeApplicationShutdown();
    expect(await usageRows(b.sessionId)).toBe(1);

    // A commit that wrote but whose answer was lost gives the row back: not written twice.
    const usage3 = new LlmUsageRepository(ds);
    const c = await session(usage3);
    const m3 = randomUUID();
    const row = usageOf(c, m3);
    await usage3.record(row);
    await c.store.commit(c.sessionId, ...answer(c, m3));
    usage3.giveBack([row]);
    await usage3.beforeApplicationShutdown();
    expect(await usageRows(c.sessionId)).toBe(1);

    // Other purposes (compaction, title) are written at once, as before.
    const usage4 = new LlmUsageRepository(ds);
    const d = await session(usage4);
    await usage4.record({ ...usageOf(d, randomUUID()), purpose: 'compaction' });
    expect(await usageRows(d.sessionId)).toBe(1);
  });

  it('the round boundary reads the queued inbox the commit returned; what is queued later is read after', async () => {
    const s = await session();
    const queue = async (content: string): Promise<string> => {
      const id = randomUUID();
      await ds.query(
        `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery, is_synthetic)
         VALUES ($1, $2, $3, $4, $5, 'steer', false)`,
        pgParams([id, s.sessionId, s.userId, randomUUID(), content]),
      );
      return id;
    };
    const early = await queue('before the commit \u0000');
    await s.store.commit(s.sessionId, ...answer(s, randomUUID()));
    const late = await queue('after the commit');
    const first = await s.store.listInbox(s.sessionId);
    expect(first.map((i) => i.id)).toEqual([early]);
    expect(first[0].content).toBe('before the commit \u0000');
    expect(Number.isNaN(Date.parse(first[0].createdAt))).toBe(false);
    // The snapshot is taken once: the next read asks Postgres and sees the later item.
    expect((await s.store.listInbox(s.sessionId)).map((i) => i.id)).toEqual([early, late]);
    // What the driver asks after a turn: the inbox as of the last commit — a transaction's too
    // (its fence statement reads it; what the commit itself settled is left out).
    expect(s.store.queuedAtLastCommit()?.map((i) => i.id)).toEqual([early]);
    await s.store.commit(s.sessionId, [{ kind: 'discardInbox', inboxId: early }], []);
    expect(s.store.queuedAtLastCommit()?.map((i) => i.id)).toEqual([late]);
    // A failed commit knows nothing of the inbox.
    await expect(s.store.commit(s.sessionId, [{ kind: 'consumeInbox', inboxId: early }], [])).rejects.toThrow(
      'already settled',
    );
    expect(s.store.queuedAtLastCommit()).toBeNull();
    const empty = await session();
    await empty.store.commit(empty.sessionId, ...answer(empty, randomUUID()));
    expect(empty.store.queuedAtLastCommit()).toEqual([]);
  });

  function answer(s: { sessionId: string; frameId: string }, messageId: string): [Mutation[], SessionEventDraft[]] {
    const callId = randomUUID();
    return [
      [
        {
          kind: 'appendMessage',
          message: {
            id: messageId,
            sessionId: s.sessionId,
            frameId: s.frameId,
            role: 'assistant',
            content: '',
            reasoningContent: null,
            isSynthetic: false,
            attachments: null,
            clientMessageId: null,
            inputTokens: 10,
            outputTokens: 5,
            createdAt: new Date().toISOString(),
          },
        },
        { kind: 'createToolCall', call: pendingReadFile(s, messageId, callId, 0, 'call_1') },
      ],
      [{ type: 'thinking', message_id: messageId, content: 'reading' }],
    ];
  }

  async function usageRows(sessionId: string): Promise<number> {
    const [r] = await ds.query<Array<{ n: number }>>(`SELECT count(*)::int AS n FROM llm_usage WHERE session_id = $1`, [
      sessionId,
    ]);
    return r.n;
  }
});

/** What an inbox item is when the first commit runs (the driver read it while it was queued). */
type ItemState = 'queued' | 'entered' | 'discarded' | 'moved' | 'missing';

const itemSpec = fc.record({
  content: text,
  attachments: fc.boolean(),
  delivery: fc.constantFrom('steer' as const, 'queue' as const, 'interrupt' as const),
  // A synthetic task delivery (an async task's `task_completed`): a synthetic assistant row and one done call.
  task: fc.option(fc.record({ toolName: text, argumentsText: text, result: text })),
  state: fc.constantFrom<ItemState>('queued', 'queued', 'queued', 'entered', 'discarded', 'moved', 'missing'),
});

const firstCommitSpec = fc.record({
  items: fc.array(itemSpec, { minLength: 1, maxLength: 3 }),
  /** A regenerate's item starts the turn without a row (`consumeInbox`) instead of entering. */
  consumeFirst: fc.boolean(),
  turn: fc.boolean(),
  /** Items queued in the session that this commit does not settle (the inbox it returns). */
  others: fc.array(text, { maxLength: 2 }),
  fence: fc.constantFrom('held', 'held', 'held', 'held', 'taken', 'expired'),
});
type FirstCommitSpec = typeof firstCommitSpec extends fc.Arbitrary<infer T> ? T : never;

/**
 * A turn's first commit (the inbox items entering, the root frame opened on a fresh conversation,
 * the turn state) as one statement against the transaction it replaces, over generated states:
 * the same rows (messages, calls, frames, inbox), events, seqs and errors — an item already
 * entered, discarded, moved to another conversation (a /new re-homing a delivery) or gone refuses
 * the whole commit, as the transaction's `settleInbox` does; a fenced-out commit writes nothing.
 */
describe('PgSessionStore: a turn’s first commit', () => {
  let ds: DataSource;
  const owner = `first-${randomUUID()}`;
  const CREATED = '2026-01-02T03:04:05.678Z';

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 4 } });
    await ds.initialize();
    console.log(`store first commit: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  async function session(openRoot: boolean) {
    const sessionId = randomUUID();
    const userId = randomUUID();
    const elsewhere = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web'), ($3, $2, 'home')`, [
      sessionId,
      userId,
      elsewhere,
    ]);
    await ds.query(
      `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + interval '1 hour')`,
      [sessionId, owner],
    );
    const announced: number[] = [];
    const store = new PgSessionStore(ds, { owner, epoch: 1 }, (ev) => announced.push(...ev.map((e) => e.seq)));
    const frameId = randomUUID();
    if (openRoot) await store.commit(sessionId, [openRootFrame(sessionId, frameId)], []);
    return {
      sessionId,
      userId,
      elsewhere,
      frameId,
      store,
      announced,
      rootOpen: openRoot,
      clientIds: 0,
      last: null as unknown,
    };
  }
  type S = Awaited<ReturnType<typeof session>>;

  /** The loop's own construction of the rows an item becomes (`inboxEntry`), as run-turn uses it. */
  function turnOf(s: S): Parameters<typeof inboxEntry>[0] {
    const partial = {
      session: { id: s.sessionId },
      deps: { ids: { newId: () => randomUUID() }, clock: { now: () => new Date(CREATED) } },
    };
    return partial as unknown as Parameters<typeof inboxEntry>[0];
  }

  async function queue(s: S, content: string, delivery: string, task: unknown): Promise<string> {
    const id = randomUUID();
    await ds.query(
      `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, attachments, delivery,
                                  is_synthetic, tool_result)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      pgParams([
        id,
        s.sessionId,
        s.userId,
        `c-${s.clientIds++}`,
        content,
        JSON.stringify(deepToPgText([{ path: `/workspace/${content}`, name: content, filesize: 3 }])),
        delivery,
        task !== null,
        task === null ? null : JSON.stringify(deepToPgText(task)),
      ]),
    );
    return id;
  }

  /** Queues the spec's items, reads them as the driver does, then moves them to their state. */
  async function firstCommit(
    s: S,
    spec: FirstCommitSpec,
    forceTransaction: boolean,
  ): Promise<{ mutations: Mutation[]; events: SessionEventDraft[] }> {
    const ids: string[] = [];
    for (const it of spec.items)
      ids.push(
        await queue(
          s,
          it.content,
          it.delivery,
          it.task
            ? { tool_name: it.task.toolName, arguments_text: it.task.argumentsText, result: it.task.result }
            : null,
        ),
      );
    for (const o of spec.others) await queue(s, o, 'queue', null);
    // A reader without the snapshot the session's store keeps from its last commit.
    const read = await new PgSessionStore(ds, { owner, epoch: 1 }, () => undefined).listInbox(s.sessionId);
    const items = ids.map((id) => read.find((i) => i.id === id)!);
    for (const [i, it] of spec.items.entries()) {
      if (it.state === 'entered' || it.state === 'discarded')
        await ds.query(`UPDATE session_inbox SET status = $2, settled_at = now() WHERE id = $1`, [ids[i], it.state]);
      if (it.state === 'moved')
        await ds.query(`UPDATE session_inbox SET session_id = $2 WHERE id = $1`, [ids[i], s.elsewhere]);
      if (it.state === 'missing') await ds.query(`DELETE FROM session_inbox WHERE id = $1`, [ids[i]]);
    }
    const mutations: Mutation[] = [];
    const events: SessionEventDraft[] = [];
    if (!s.rootOpen) mutations.push(openRootFrame(s.sessionId, s.frameId));
    const turn = turnOf(s);
    for (const [i, item] of items.entries()) {
      if (i === 0 && spec.consumeFirst) {
        mutations.push({ kind: 'consumeInbox', inboxId: item.id });
        continue;
      }
      const entry = inboxEntry(turn, s.frameId, {
        ...item,
        attachments: spec.items[i].attachments ? item.attachments : null,
      });
      mutations.push(...entry.mutations);
      if (!entry.message.isSynthetic) events.push(userMessageEvent(entry.message));
    }
    if (spec.turn) mutations.push({ kind: 'setTurnState', sessionId: s.sessionId, state: 'running', turnId: ids[0] });
    if (forceTransaction)
      mutations.push({ kind: 'grantTools', scope: { kind: 'frame', frameId: s.frameId }, groups: [] });
    expect(fitsOneStatement(mutations)).toBe(!forceTransaction);
    if (spec.fence === 'taken')
      await ds.query(`UPDATE session_leases SET owner = 'other', epoch = epoch + 1 WHERE session_id = $1`, [
        s.sessionId,
      ]);
    if (spec.fence === 'expired')
      await ds.query(`UPDATE session_leases SET expires_at = now() - interval '1 second' WHERE session_id = $1`, [
        s.sessionId,
      ]);
    return { mutations, events };
  }

  const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

  /** What a session holds, ids replaced by the order they first appear in (they differ by construction). */
  async function contents(s: S) {
    const rows = {
      frames: await ds.query<Array<Record<string, unknown>>>(
        `SELECT id, parent_frame_id, parent_tool_call_id, agent_id, depth, status, client, epoch
           FROM stack_frames WHERE session_id = $1 ORDER BY ord`,
        [s.sessionId],
      ),
      messages: await ds.query<Array<Record<string, unknown>>>(
        `SELECT id, frame_id, role, content, reasoning, is_synthetic, status, metadata, client_message_id, input_tokens,
                output_tokens, epoch, created_at, cost_usd, tokens_estimated, llm_client, llm_model
           FROM chat_history WHERE session_id = $1 ORDER BY ord`,
        [s.sessionId],
      ),
      calls: await ds.query<Array<Record<string, unknown>>>(
        `SELECT id, frame_id, message_id, idx, name, arguments, status, result, result_type, request_id, epoch,
                (started_at IS NULL) AS not_started, (finished_at IS NULL) AS not_finished
           FROM tool_calls WHERE session_id = $1 ORDER BY ord`,
        [s.sessionId],
      ),
      inbox: await ds.query<Array<Record<string, unknown>>>(
        `SELECT id, session_id = $1 AS here, status, (settled_at IS NULL) AS unsettled, content
           FROM session_inbox WHERE user_id = $2 ORDER BY ord`,
        [s.sessionId, s.userId],
      ),
      events: await ds.query<Array<Record<string, unknown>>>(
        `SELECT seq::int, type, payload FROM session_events WHERE session_id = $1 ORDER BY seq`,
        [s.sessionId],
      ),
      head: await ds.query<Array<Record<string, unknown>>>(
        `SELECT last_seq::int, turn_state, turn_id, turn_seq::int FROM sessions WHERE id = $1`,
        [s.sessionId],
      ),
    };
    const names = new Map<string, string>();
    const named = JSON.stringify(rows, (_k, v: unknown) => (v instanceof Date ? v.toISOString() : v)).replace(
      UUID,
      (id) => {
        if (!names.has(id)) names.set(id, `id${names.size}`);
        return names.get(id)!;
      },
    );
    return JSON.parse(named) as unknown;
  }

  async function outcome(s: S, mutations: Mutation[], events: SessionEventDraft[]) {
    try {
      await s.store.commit(s.sessionId, mutations, events);
      return { ok: true, queued: s.store.queuedAtLastCommit()?.map((i) => i.content) };
    } catch (e) {
      const err = e as Error;
      return { ok: false, error: err.constructor.name, message: err.message.replace(UUID, 'id') };
    }
  }

  it('writes the same rows, events, seqs and errors as the transaction, over generated first commits', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.array(firstCommitSpec, { minLength: 1, maxLength: 3 }),
        async (fresh, specs) => {
          const fast = await session(!fresh);
          const slow = await session(!fresh);
          for (const spec of specs) {
            for (const [s, forceTransaction] of [
              [fast, false],
              [slow, true],
            ] as const) {
              const { mutations, events } = await firstCommit(s, spec, forceTransaction);
              const result = await outcome(s, mutations, events);
              if (result.ok) s.rootOpen = true;
              s.last = result;
              // The lease back, for the next commit.
              await ds.query(
                `UPDATE session_leases SET owner = $2, epoch = 1, expires_at = now() + interval '1 hour' WHERE session_id = $1`,
                [s.sessionId, owner],
              );
            }
            expect(fast.last).toEqual(slow.last);
            expect(await contents(fast)).toEqual(await contents(slow));
            expect(fast.announced).toEqual(slow.announced);
          }
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
  });

  /** A first commit of `n` steer items queued and still queued, the lease held, a turn started. */
  function queuedSteers(
    n: number,
    item: (i: number) => Pick<FirstCommitSpec['items'][number], 'content' | 'task'>,
  ): FirstCommitSpec {
    const items = Array.from({ length: n }, (_, i) => ({
      ...item(i),
      attachments: false,
      delivery: 'steer' as const,
      state: 'queued' as const,
    }));
    return { items, consumeFirst: false, turn: true, others: [], fence: 'held' };
  }

  /** The inbox items a commit enters, in the order it lists them. */
  const enteredIds = (mutations: Mutation[]): string[] =>
    mutations.flatMap((m) => (m.kind === 'enterInbox' ? [m.inboxId] : []));

  it('an item a racing /new moves while the commit waits for it is refused, and nothing is written', async () => {
    for (const forceTransaction of [false, true]) {
      for (const [moveIndex, commitOutcome] of [
        [0, 'commit'],
        [1, 'commit'],
        [1, 'rollback'],
      ] as const) {
        const s = await session(false);
        const spec = queuedSteers(2, (n) => ({
          content: `item ${n} \u0000`,
          task: n === 1 ? { toolName: 'task_completed', argumentsText: '{}', result: 'done \ud800' } : null,
        }));
        const { mutations, events } = await firstCommit(s, spec, forceTransaction);
        const moved = enteredIds(mutations)[moveIndex];
        // A /new re-homing the delivery holds its row while the commit runs.
        const qr = ds.createQueryRunner();
        await qr.connect();
        await qr.startTransaction();
        await qr.query(`UPDATE session_inbox SET session_id = $2 WHERE id = $1`, [moved, s.elsewhere]);
        const pending = outcome(s, mutations, events);
        await new Promise((r) => setTimeout(r, 150));
        if (commitOutcome === 'commit') await qr.commitTransaction();
        else await qr.rollbackTransaction();
        await qr.release();
        const result = await pending;
        const [n] = await ds.query<Array<Record<string, unknown>>>(
          `SELECT (SELECT count(*) FROM chat_history WHERE session_id = $1)::int AS messages,
                  (SELECT count(*) FROM tool_calls WHERE session_id = $1)::int AS calls,
                  (SELECT count(*) FROM stack_frames WHERE session_id = $1)::int AS frames,
                  (SELECT count(*) FROM session_inbox WHERE session_id = $1 AND status = 'entered')::int AS entered,
                  (SELECT last_seq FROM sessions WHERE id = $1)::int AS last_seq`,
          [s.sessionId],
        );
        if (commitOutcome === 'commit') {
          expect(result).toEqual({
            ok: false,
            error: 'Error',
            message: 'inbox item id already settled or moved to another conversation',
          });
          expect(n).toEqual({ messages: 0, calls: 0, frames: 0, entered: 0, last_seq: 0 });
          expect(s.announced).toEqual([]);
        } else {
          expect(result).toMatchObject({ ok: true });
          expect(n).toEqual({ messages: 2, calls: 1, frames: 1, entered: 2, last_seq: 1 });
          expect(s.announced).toEqual([1]);
        }
      }
    }
  });

  /**
   * Row-lock order: a commit entering several deliveries and a `/new` re-homing the same deliveries
   * (`moveQueuedDeliveries`) lock the same inbox rows. Each must lock them in one agreed order
   * whatever the plan and whatever order the commit lists them in, or the two wait on each other and
   * Postgres aborts one (`deadlock detected`: a failed turn commit or a failed /new). Made
   * deterministic: a third transaction holds one of the rows; the commit waits on it, the move
   * starts and takes what it can, then the row is let go. With one order, whoever waits first takes
   * every row; with two, each holds a row the other waits for. The commit lists the items in queue
   * order, or not (the first item re-queued last: a commit's order is its caller's).
   */
  it('a commit entering several deliveries and a /new moving them never deadlock', async () => {
    const moves = new JobSessionsRepository(ds);
    const task = { toolName: 'task_completed', argumentsText: '{}', result: 'done' };
    const results: Array<{
      forceTransaction: boolean;
      requeueFirst: boolean;
      held: number;
      commit: unknown;
      move: unknown;
    }> = [];
    for (const forceTransaction of [false, true]) {
      for (const requeueFirst of [false, true]) {
        for (const held of [0, 1, 2]) {
          const s = await session(true);
          const spec = queuedSteers(3, (n) => ({ content: `delivery ${n}`, task }));
          const { mutations, events } = await firstCommit(s, spec, forceTransaction);
          const ids = enteredIds(mutations);
          if (requeueFirst) await ds.query(`UPDATE session_inbox SET ord = DEFAULT WHERE id = $1`, [ids[0]]);
          const blocker = ds.createQueryRunner();
          await blocker.connect();
          await blocker.startTransaction();
          const pid = await backendPid(blocker);
          await blocker.query(`SELECT 1 FROM session_inbox WHERE id = $1 FOR UPDATE`, [ids[held]]);
          const committed = outcome(s, mutations, events);
          await waitingOn(ds, pid, 1);
          const moved = moves
            .moveQueuedDeliveries({ userId: s.userId, fromSessionId: s.sessionId, toSessionId: s.elsewhere })
            .then(
              (n) => ({ ok: true as const, n }),
              (e: Error) => ({ ok: false as const, message: e.message }),
            );
          await waitingOn(ds, pid, 2);
          await blocker.commitTransaction();
          await blocker.release();
          const [commit, move] = await Promise.all([committed, moved]);
          results.push({ forceTransaction, requeueFirst, held, commit, move });
        }
      }
    }
    // The commit waited first, so it takes every row and enters all three; the move then finds none
    // queued. Two orders would end one of them with "deadlock detected" instead.
    expect(results).toEqual(
      results.map(({ forceTransaction, requeueFirst, held }) => ({
        forceTransaction,
        requeueFirst,
        held,
        commit: { ok: true, queued: [] },
        move: { ok: true, n: 0 },
      })),
    );
  });
});
