import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { deepToPgText, pgParams } from '@skald/persistence/pg-text';
import type { Mutation, ToolCallStatus } from '@skald/agent-loop';
import { ToolCallStatus as ToolCallStatusEnum } from '@skald/contracts';
import { openRootFrame } from '../../testing-fixtures/root-frame';
import { PgSessionStore } from './pg-session-store';
import { TURN_START_SQL } from './turn-start';
import { TurnStateRepository } from '../../sessions/turn-state.repository';
import { toUserAgentRow, UserAgentsRepository } from '../../agents/user-agents.repository';

jest.setTimeout(180_000);

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = 30;

const text = fc.oneof(
  fc.string({ maxLength: 16 }),
  fc.string({ unit: fc.constantFrom('\u0000', '\ud800', '\udc00', 'x', '\\', '"', '\n', 'é'), maxLength: 8 }),
);
// Every status a tool call can have (the contract's enum, so a new one is generated too).
const statuses: ToolCallStatus[] = [...ToolCallStatusEnum.options];

const message = fc.record({
  role: fc.constantFrom('user', 'assistant', 'agent'),
  content: text,
  reasoning: fc.option(text),
  status: fc.constantFrom('ok', 'failed', 'superseded'),
  synthetic: fc.boolean(),
  attachments: fc.option(fc.array(fc.record({ name: text, path: text }), { maxLength: 2 })),
  clientMessageId: fc.option(text),
  inputTokens: fc.option(fc.nat({ max: 100_000 })),
  outputTokens: fc.option(fc.nat({ max: 100_000 })),
  cost: fc.option(fc.constantFrom('0', '0.000123', '1.5', '12345.678901')),
  estimated: fc.boolean(),
  client: fc.option(text),
  createdAtMs: fc.integer({ min: 0, max: 10_000_000 }),
  calls: fc.array(
    fc.record({
      name: text,
      args: text,
      status: fc.constantFrom(...statuses),
      result: fc.option(text),
      resultType: fc.option(text),
      requestId: fc.option(fc.uuid()),
      previewHash: fc.option(text),
      staleReasks: fc.option(fc.nat({ max: 3 })),
      judgedLanding: fc.option(fc.array(fc.option(text), { maxLength: 3 })),
    }),
    { maxLength: 3 },
  ),
});

const frame = fc.record({
  active: fc.boolean(),
  agentId: fc.constantFrom('main', 'coder', 'researcher'),
  client: fc.option(text),
  messages: fc.array(message, { maxLength: 5 }),
  grants: fc.uniqueArray(fc.constantFrom('fs', 'web', 'git', 'shell'), { maxLength: 3 }),
  compaction: fc.option(text),
});

const inboxItem = fc.record({
  delivery: fc.constantFrom('steer', 'queue', 'interrupt'),
  status: fc.constantFrom('queued', 'queued', 'entered', 'discarded'),
  content: text,
  attachments: fc.option(fc.array(fc.record({ name: text }), { maxLength: 2 })),
  toolResult: fc.option(fc.record({ tool_name: text, arguments_text: text, result: text })),
  rewind: fc.option(fc.constantFrom('regenerate', 'edit')),
  synthetic: fc.boolean(),
});

const state = fc.record({
  source: fc.constantFrom('web', 'cli', 'telegram'),
  agentId: fc.constantFrom('main', 'coder'),
  ownerRole: fc.constantFrom('user', 'admin'),
  stop: fc.boolean(),
  turnState: fc.constantFrom('running', 'parked', 'finished'),
  turnId: fc.option(fc.uuid()),
  clientPin: fc.option(text),
  userPin: fc.option(text),
  otherSourcePin: fc.boolean(),
  sharedScratchpad: fc.boolean(),
  securityGroup: fc.option(fc.constantFrom('', 'ops', 'dev')),
  runContext: fc.constantFrom(
    {},
    { working_directory: '/w', system_prompt: ['a', 'b'], allow_fs_reads: ['/r'], allow_fs_writes: ['/w'] },
    { allow_fs_reads: 'not a list', allow_fs_writes: [1, '/x'] },
  ),
  interactive: fc.boolean(),
  ephemeral: fc.boolean(),
  autoDeny: fc.boolean(),
  /** The root frame first; more frames are children (depth 1) or a closed old root. */
  frames: fc.array(frame, { minLength: 0, maxLength: 3 }),
  sessionGrants: fc.uniqueArray(fc.constantFrom('fs', 'web', 'git', 'shell'), { maxLength: 4 }),
  scratchpad: fc.uniqueArray(fc.record({ key: text, value: text }), { selector: (n) => n.key, maxLength: 4 }),
  inbox: fc.array(inboxItem, { maxLength: 5 }),
  userAgents: fc.uniqueArray(
    fc.record({
      agentId: fc.constantFrom('main', 'coder', 'my-agent', 'x_1'),
      prompt: fc.option(fc.string({ maxLength: 16 })),
      meta: fc.constantFrom({}, { name: 'N', type: 'task' }, { instructions: 'be brief', tools: ['fs'] }),
    }),
    { selector: (a) => a.agentId, maxLength: 3 },
  ),
});

/** A jsonb parameter as the repositories write it (strings through the text codec). */
const json = (v: unknown): string => JSON.stringify(deepToPgText(v));

type State = typeof state extends fc.Arbitrary<infer T> ? T : never;

/** A session with nothing in it (a fresh conversation). */
const emptyState: State = {
  source: 'web',
  agentId: 'main',
  ownerRole: 'user',
  stop: false,
  turnState: 'finished',
  turnId: null,
  clientPin: null,
  userPin: null,
  otherSourcePin: false,
  sharedScratchpad: false,
  securityGroup: null,
  runContext: {},
  interactive: true,
  ephemeral: false,
  autoDeny: false,
  frames: [],
  sessionGrants: [],
  scratchpad: [],
  inbox: [],
  userAgents: [],
};

/**
 * The turn's start read (loop-adapters/session-store/turn-start.ts: ONE statement) answers exactly what the separate
 * reads it replaces answer — PgSessionStore.getSession / listInbox / listActiveFrames /
 * listMessages / listToolCalls / getGrants / getScratchpad / getCompaction on a fresh store,
 * TurnStateRepository.turnControl, UserAgentsRepository.list — over generated session states
 * (frames active and closed, messages ok / failed / superseded, tool calls in every status, grants
 * of the session and of each frame, scratchpad, compaction, inbox items of every delivery and
 * status, stop flag, pins, user agents), with a second session of the same user and another
 * user's rows beside it. The store it primed answers its next reads the same again.
 */
describe('PgSessionStore.startTurn: one statement equals the separate reads', () => {
  let ds: DataSource;
  const owner = `turn-start-${randomUUID()}`;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 3 } });
    await ds.initialize();
    console.log(`turn start: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  const q = (sql: string, params: unknown[]) => ds.query(sql, pgParams(params));

  /** Writes the state for a new session of `userId`; returns its id. */
  async function seed(userId: string, s: State, source: string): Promise<string> {
    const sessionId = randomUUID();
    const scratchpadId = s.sharedScratchpad ? randomUUID() : null;
    await q(
      `INSERT INTO sessions (id, user_id, source, agent_id, owner_role, is_interactive, is_ephemeral,
                             auto_deny_approvals, scratchpad_session_id, security_group, run_context, client_pin,
                             turn_state, turn_id, stop_requested_at, is_active)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
               CASE WHEN $15::boolean THEN now() END, $16)`,
      [
        sessionId,
        userId,
        source,
        s.agentId,
        s.ownerRole,
        s.interactive,
        s.ephemeral,
        s.autoDeny,
        scratchpadId,
        s.securityGroup,
        json(s.runContext),
        s.clientPin,
        s.turnState,
        s.turnId,
        s.stop,
        false,
      ],
    );
    if (s.userPin !== null)
      await q(
        `INSERT INTO llm_client_pins (user_id, source, client) VALUES ($1, $2, $3)
         ON CONFLICT (user_id, source) DO UPDATE SET client = EXCLUDED.client`,
        [userId, source, s.userPin],
      );
    if (s.otherSourcePin)
      await q(
        `INSERT INTO llm_client_pins (user_id, source, client) VALUES ($1, 'elsewhere', 'other')
         ON CONFLICT DO NOTHING`,
        [userId],
      );
    let rootId: string | null = null;
    for (const [i, f] of s.frames.entries()) {
      const frameId = randomUUID();
      const child = i > 0 && rootId !== null && f.active;
      await q(
        `INSERT INTO stack_frames (id, session_id, parent_frame_id, agent_id, depth, status, client, epoch)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 1)`,
        [
          frameId,
          sessionId,
          child ? rootId : null,
          f.agentId,
          child ? 1 : 0,
          f.active || i === 0 ? 'active' : 'closed',
          f.client,
        ],
      );
      if (i === 0) rootId = frameId;
      const messageIds: string[] = [];
      for (const m of f.messages) {
        const id = randomUUID();
        messageIds.push(id);
        await q(
          `INSERT INTO chat_history (id, session_id, frame_id, role, content, reasoning, is_synthetic, status, metadata,
                                     client_message_id, input_tokens, output_tokens, epoch, created_at, cost_usd,
                                     tokens_estimated, llm_client, llm_model)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 1, $13, $14, $15, $16, $17)`,
          [
            id,
            sessionId,
            frameId,
            m.role,
            m.content,
            m.reasoning,
            m.synthetic,
            m.status,
            m.attachments ? json({ attachments: m.attachments }) : null,
            m.clientMessageId,
            m.inputTokens,
            m.outputTokens,
            new Date(Date.UTC(2026, 0, 1) + m.createdAtMs).toISOString(),
            m.cost,
            m.estimated,
            m.client,
            m.client === null ? null : 'model-x',
          ],
        );
        for (const [idx, c] of m.calls.entries())
          await q(
            `INSERT INTO tool_calls (id, session_id, frame_id, message_id, idx, llm_call_id, name, arguments, status,
                                     result, result_type, request_id, preview_hash, stale_reasks, judged_landing, epoch)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, COALESCE($14::integer, 0), $15::jsonb, 1)`,
            [
              randomUUID(),
              sessionId,
              frameId,
              id,
              idx,
              `call_${idx}`,
              c.name,
              c.args,
              c.status,
              c.result,
              c.resultType,
              c.requestId,
              c.previewHash,
              c.staleReasks,
              c.judgedLanding === null ? null : json(c.judgedLanding),
            ],
          );
      }
      for (const g of f.grants)
        await q(`INSERT INTO tool_grants (session_id, frame_id, group_name) VALUES ($1, $2, $3)`, [
          sessionId,
          frameId,
          g,
        ]);
      if (f.compaction !== null && messageIds.length > 0)
        await q(
          `INSERT INTO compaction_summaries (session_id, frame_id, summary, boundary_message_id) VALUES ($1, $2, $3, $4)`,
          [sessionId, frameId, f.compaction, messageIds[0]],
        );
    }
    for (const g of s.sessionGrants)
      await q(`INSERT INTO tool_grants (session_id, frame_id, group_name) VALUES ($1, NULL, $2)`, [sessionId, g]);
    for (const n of s.scratchpad)
      await q(`INSERT INTO session_scratchpad (scratchpad_session_id, key, value) VALUES ($1, $2, $3)`, [
        scratchpadId ?? sessionId,
        n.key,
        n.value,
      ]);
    for (const item of s.inbox)
      await q(
        `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, attachments, delivery,
                                    is_synthetic, status, tool_result, rewind_kind, rewind_message_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
        [
          randomUUID(),
          sessionId,
          userId,
          randomUUID(),
          item.content,
          item.attachments ? json(item.attachments) : null,
          item.delivery,
          item.synthetic,
          item.status,
          item.toolResult ? json(item.toolResult) : null,
          item.rewind,
          item.rewind ? randomUUID() : null,
        ],
      );
    return sessionId;
  }

  /** Every read the start read replaces, each on its own (fresh stores: nothing cached). */
  async function separateReads(sessionId: string, userId: string) {
    const fence = { owner, epoch: 1 };
    const fresh = () => new PgSessionStore(ds, fence, () => undefined);
    const session = await fresh().getSession(sessionId);
    const frames = await fresh().listActiveFrames(sessionId);
    const perFrame = async <T>(f: (s: PgSessionStore, frameId: string) => Promise<T>) =>
      Object.fromEntries(await Promise.all(frames.map(async (fr) => [fr.id, await f(fresh(), fr.id)] as const)));
    return {
      session,
      control: await new TurnStateRepository(ds).turnControl(sessionId),
      inbox: await fresh().listInbox(sessionId),
      frames,
      messages: await perFrame((s, id) => s.listMessages(id, { includeFailed: true })),
      okMessages: await perFrame((s, id) => s.listMessages(id)),
      toolCalls: await perFrame((s, id) => s.listToolCalls(id)),
      frameGrants: await perFrame((s, id) => s.getGrants({ kind: 'frame', frameId: id })),
      sessionGrants: await fresh().getGrants({ kind: 'session', sessionId }),
      scratchpad: await fresh().getScratchpad(session.scratchpadSessionId),
      compactions: await perFrame((s, id) => s.getCompaction(id)),
      userAgents: await new UserAgentsRepository(ds).list({ userId }),
    };
  }

  it('over generated session states, the one statement gives what the separate reads give', async () => {
    await fc.assert(
      fc.asyncProperty(state, state, fc.array(fc.boolean(), { maxLength: 6 }), async (s, noise, carry) => {
        const userId = randomUUID();
        // As their only writer writes them (the repository: no text codec).
        const agents = new UserAgentsRepository(ds);
        for (const a of s.userAgents) await agents.upsert({ userId, agentId: a.agentId }, a.prompt, a.meta);
        // Another user's agent and a sibling session of the same user: never part of the answer.
        await q(`INSERT INTO user_agents (user_id, agent_id, prompt) VALUES ($1, 'main', 'not yours')`, [randomUUID()]);
        await seed(userId, noise, `${s.source}-old`);
        const sessionId = await seed(userId, s, s.source);

        const expected = await separateReads(sessionId, userId);
        const store = new PgSessionStore(ds, { owner, epoch: 1 }, () => undefined);
        // Some frames' rows carried from the previous turn (as the tables hold them), and a frame
        // that is no longer active (its rows must not appear): the answer is the same.
        const carried = new Map(
          expected.frames
            .filter((_, i) => carry[i])
            .map((f) => [f.id, { messages: expected.messages[f.id], toolCalls: expected.toolCalls[f.id] }]),
        );
        carried.set(randomUUID(), { messages: [], toolCalls: [] });
        const start = await store.startTurn(sessionId, carried);
        const byId = <T>(m: Map<string, T>) => Object.fromEntries(m);
        const hasWork =
          s.turnState === 'running' ||
          (s.turnState === 'parked' && s.stop) ||
          (s.turnState === 'finished' && s.inbox.some((i) => i.status === 'queued'));
        expect(start.complete).toBe(hasWork);
        expect({ session: start.session, control: { stop: start.stop, role: start.role }, inbox: start.inbox }).toEqual(
          {
            session: expected.session,
            control: expected.control,
            inbox: expected.inbox,
          },
        );
        if (!start.complete) {
          // Nothing but the session and the inbox is primed: the frames are read from Postgres.
          expect(await store.getSession(sessionId)).toEqual(expected.session);
          expect(await store.listInbox(sessionId)).toEqual(expected.inbox);
          const before = await statementsRun();
          expect(await store.listActiveFrames(sessionId)).toEqual(expected.frames);
          for (const f of expected.frames) expect(await store.listToolCalls(f.id)).toEqual(expected.toolCalls[f.id]);
          expect(await store.getScratchpad(expected.session.scratchpadSessionId)).toEqual(expected.scratchpad);
          expect(await statementsRun()).toBe(before + 2 + expected.frames.length);
          return;
        }
        expect({
          session: start.session,
          control: { stop: start.stop, role: start.role },
          inbox: start.inbox,
          frames: start.frames,
          messages: byId(start.messages),
          toolCalls: byId(start.toolCalls),
          frameGrants: Object.fromEntries(start.frames.map((f) => [f.id, start.grants.get(`f:${f.id}`)])),
          sessionGrants: start.grants.get(`s:${sessionId}`),
          scratchpad: start.scratchpad,
          compactions: byId(start.compactions),
          userAgents: start.userAgents.map(toUserAgentRow),
        }).toEqual({
          session: expected.session,
          control: expected.control,
          inbox: expected.inbox,
          frames: expected.frames,
          messages: expected.messages,
          toolCalls: expected.toolCalls,
          frameGrants: expected.frameGrants,
          sessionGrants: expected.sessionGrants,
          scratchpad: expected.scratchpad,
          compactions: expected.compactions,
          userAgents: expected.userAgents,
        });
        expect(start.stop).toBe(s.stop);
        expect(start.frames.length).toBe(s.frames.filter((f, i) => i === 0 || f.active).length);

        // The primed store answers its next reads as Postgres does, without asking it.
        const before = await statementsRun();
        expect(await store.getSession(sessionId)).toEqual(expected.session);
        expect(await store.listInbox(sessionId)).toEqual(expected.inbox);
        expect(await store.listActiveFrames(sessionId)).toEqual(expected.frames);
        for (const f of expected.frames) {
          expect(await store.listMessages(f.id, { includeFailed: true })).toEqual(expected.messages[f.id]);
          expect(await store.listMessages(f.id)).toEqual(expected.okMessages[f.id]);
          expect(await store.listToolCalls(f.id)).toEqual(expected.toolCalls[f.id]);
          expect(await store.getGrants({ kind: 'frame', frameId: f.id })).toEqual(expected.frameGrants[f.id]);
          expect(await store.getCompaction(f.id)).toEqual(expected.compactions[f.id]);
        }
        expect(await store.getGrants({ kind: 'session', sessionId })).toEqual(expected.sessionGrants);
        expect(await store.getScratchpad(expected.session.scratchpadSessionId)).toEqual(expected.scratchpad);
        expect(await statementsRun()).toBe(before);
        // Taken once: the next reads of the session, the inbox and the frames ask Postgres again.
        expect(await store.getSession(sessionId)).toEqual(expected.session);
        expect(await store.listInbox(sessionId)).toEqual(expected.inbox);
        expect(await store.listActiveFrames(sessionId)).toEqual(expected.frames);
        expect(await statementsRun()).toBe(before + 3);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  /**
   * A commit on the transaction path (the turn's first: `enterInbox`, `openFrame`, …) returns the
   * queued inbox as its fence statement saw it, less what it settled — so the round boundary that
   * follows does not read it again: that answer equals a read of the inbox after the commit.
   */
  it('after a transaction commit, the inbox it returned equals a read of the inbox', async () => {
    const settle = fc.record({ kind: fc.constantFrom('enter', 'consume', 'discard', 'keep'), withEvent: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(
        fc.array(inboxItem, { maxLength: 5 }),
        fc.array(settle, { minLength: 1, maxLength: 5 }),
        fc.boolean(),
        async (items, settles, withEvents) => {
          const userId = randomUUID();
          const sessionId = await seed(userId, { ...emptyState, inbox: items }, 'web');
          await q(
            `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + interval '1 hour')`,
            [sessionId, owner],
          );
          const store = new PgSessionStore(ds, { owner, epoch: 1 }, () => undefined);
          const frameId = randomUUID();
          const queued = await store.listInbox(sessionId);
          const mutations: Mutation[] = [openRootFrame(sessionId, frameId)];
          for (const [i, item] of queued.entries()) {
            const st = settles[i % settles.length];
            if (st.kind === 'enter')
              mutations.push({
                kind: 'enterInbox',
                inboxId: item.id,
                message: {
                  id: randomUUID(),
                  sessionId,
                  frameId,
                  role: 'user',
                  content: item.content,
                  reasoningContent: null,
                  isSynthetic: false,
                  attachments: null,
                  clientMessageId: item.clientMessageId,
                  inputTokens: null,
                  outputTokens: null,
                  createdAt: new Date().toISOString(),
                },
              });
            else if (st.kind === 'consume') mutations.push({ kind: 'consumeInbox', inboxId: item.id });
            else if (st.kind === 'discard') mutations.push({ kind: 'discardInbox', inboxId: item.id });
          }
          await store.commit(sessionId, mutations, withEvents ? [{ type: 'error', code: 'x', message: 'y' }] : []);
          const fresh = await new PgSessionStore(ds, { owner, epoch: 1 }, () => undefined).listInbox(sessionId);
          expect(store.queuedAtLastCommit()).toEqual(fresh);
          const before = await statementsRun();
          expect(await store.listInbox(sessionId)).toEqual(fresh);
          expect(await statementsRun()).toBe(before);
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
  });

  /**
   * A carried frame's rows are not read: the statement leaves them out (its answer shrinks) and the
   * carried ones stand for them — shown with a carried frame whose rows differ from the table's.
   */
  it("a carried frame's rows are the carried ones; the statement does not read them", async () => {
    const [withRows] = fc.sample(
      state.filter((x) => x.frames.length > 0 && x.frames[0].messages.some((m) => m.calls.length > 0)),
      { seed: SEED, numRuns: 1 },
    );
    const s: State = { ...withRows, turnState: 'running', stop: false };
    const userId = randomUUID();
    const sessionId = await seed(userId, s, s.source);
    const expected = await separateReads(sessionId, userId);
    const root = expected.frames[0].id;
    const pool = (
      ds.driver as unknown as { master: { query: (c: object) => Promise<{ rows: Array<Record<string, string>> }> } }
    ).master;
    const raw = async (carriedIds: string[]) =>
      (await pool.query({ text: TURN_START_SQL, values: pgParams([sessionId, carriedIds]) })).rows[0];
    const whole = await raw([]);
    const without = await raw([root]);
    expect(whole.messages).toContain(root);
    expect(without.messages).not.toContain(root);
    expect(without.tool_calls).not.toContain(root);
    const told = { messages: expected.messages[root].slice(0, 1), toolCalls: [] };
    const start = await new PgSessionStore(ds, { owner, epoch: 1 }, () => undefined).startTurn(
      sessionId,
      new Map([[root, told]]),
    );
    expect(start.messages.get(root)).toEqual(told.messages);
    expect(start.toolCalls.get(root)).toEqual([]);
  });

  it('a missing session is refused as the separate read refuses it', async () => {
    const id = randomUUID();
    const store = new PgSessionStore(ds, { owner, epoch: 1 }, () => undefined);
    await expect(store.startTurn(id)).rejects.toThrow(`session ${id} not found`);
    await expect(new PgSessionStore(ds, { owner, epoch: 1 }, () => undefined).getSession(id)).rejects.toThrow(
      `session ${id} not found`,
    );
  });

  /** The statements sent to Postgres so far (node-postgres' Client.query, as TypeORM loaded it). */
  let sent = 0;
  type Proto = { query: (...a: unknown[]) => unknown };
  let clientProto: Proto;
  let originalQuery: Proto['query'];
  beforeAll(() => {
    clientProto = (ds.driver as unknown as { postgres: { Client: { prototype: Proto } } }).postgres.Client.prototype;
    originalQuery = clientProto.query;
    clientProto.query = function (this: unknown, ...a: unknown[]) {
      sent++;
      return originalQuery.apply(this, a);
    };
  });
  afterAll(() => {
    clientProto.query = originalQuery;
  });
  const statementsRun = async () => sent;
});
