import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { deepToPgText, pgParams } from '@skald/persistence/pg-text';
import { PgSessionStore } from '../loop-adapters/session-store/pg-session-store';
import type { TurnStart } from '../loop-adapters/session-store/turn-start';
import { InboxRepository } from './inbox.repository';

jest.setTimeout(180_000);

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.FC_RUNS ?? 80);
const TTL = 60_000;

const text = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.string({ unit: fc.constantFrom('\u0000', '\ud800', '\udc00', 'x', '\\', '"', "'", '\n'), maxLength: 6 }),
);

const state = fc.record({
  turnState: fc.constantFrom('finished', 'finished', 'finished', 'running', 'parked'),
  stop: fc.boolean(),
  ownerRole: fc.constantFrom('user', 'admin'),
  /** The lease before the submit: none, released, held by a live driver, expired, held by this worker's own name (busy). */
  lease: fc.constantFrom('none', 'free', 'free', 'free', 'live', 'expired', 'busy'),
  epoch: fc.integer({ min: 1, max: 5 }),
  userPin: fc.option(text),
  frames: fc.array(
    fc.record({
      active: fc.boolean(),
      messages: fc.array(
        fc.record({
          role: fc.constantFrom('user', 'assistant'),
          status: fc.constantFrom('ok', 'failed', 'superseded'),
          content: text,
          calls: fc.array(fc.record({ name: text, status: fc.constantFrom('done', 'running', 'failed') }), {
            maxLength: 2,
          }),
        }),
        { maxLength: 4 },
      ),
      grant: fc.option(fc.constantFrom('fs', 'web')),
      compaction: fc.option(text),
    }),
    { maxLength: 3 },
  ),
  sessionGrant: fc.option(fc.constantFrom('fs', 'shell')),
  scratchpad: fc.option(fc.record({ key: text, value: text })),
  userAgent: fc.option(fc.record({ prompt: fc.option(text) })),
  /** Other inbox rows of the session (queued ones are still waiting). */
  inbox: fc.array(
    fc.record({
      status: fc.constantFrom('queued', 'entered', 'discarded'),
      delivery: fc.constantFrom('steer', 'queue', 'interrupt'),
      content: text,
      toolResult: fc.boolean(),
      rewind: fc.option(fc.constantFrom('regenerate', 'edit')),
    }),
    { maxLength: 3 },
  ),
  /** Which frames' rows the worker carries (leaves out of the read), and whether its carry is still valid after the take. */
  carry: fc.array(fc.boolean(), { maxLength: 3 }),
  carryValid: fc.constantFrom(true, true, false),
  submit: fc.record({
    content: text,
    attachments: fc.option(
      fc.array(fc.record({ path: text, name: text, mimetype: fc.constant('text/plain') }), {
        maxLength: 2,
      }),
      { nil: undefined },
    ),
    delivery: fc.constantFrom('steer', 'queue', 'interrupt'),
    isSynthetic: fc.boolean(),
    role: fc.constantFrom('user', 'admin'),
    duplicate: fc.constantFrom(false, false, false, true),
  }),
});

type State = typeof state extends fc.Arbitrary<infer T> ? T : never;

const json = (v: unknown): string => JSON.stringify(deepToPgText(v));
/** A TurnStart without its read time. */
const comparable = (s: TurnStart) => ({ ...s, at: 0 });

/**
 * The submit's statement (InboxRepository.submitToActive) as the turn's start read: when it takes
 * the lease of a finished session that no driver held since its snapshot, the start read it
 * answers (PgSessionStore.startFrom) equals the driver's own start read (PgSessionStore.startTurn,
 * the statement it replaces) taken right after it — over generated sessions (frames active and
 * closed, messages of every status, tool calls, grants, scratchpad, compaction, user agents, pins,
 * queued / entered / discarded inbox items, system deliveries, rewinds, stop flag, every turn state,
 * the lease none / released / live / expired / busy here, carried frames valid or not). In every
 * other case it answers no start read (the driver reads as before).
 */
describe('InboxRepository.submitToActive: the start read in the submit', () => {
  let ds: DataSource;
  let inbox: InboxRepository;
  const owner = `submit-start-${randomUUID()}`;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 6 } });
    await ds.initialize();
    inbox = new InboxRepository(ds);
    console.log(`submit start: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  const q = (sql: string, params: unknown[]) => ds.query(sql, pgParams(params));

  async function seed(userId: string, s: State): Promise<{ sessionId: string; frameIds: string[] }> {
    const sessionId = randomUUID();
    await q(
      `INSERT INTO sessions (id, user_id, source, owner_role, turn_state, stop_requested_at, is_active)
       VALUES ($1, $2, 'web', $3, $4, CASE WHEN $5::boolean THEN now() END, true)`,
      [sessionId, userId, s.ownerRole, s.turnState, s.stop],
    );
    // A sibling session of the same user (inactive) and another user's session: never in the answer.
    await q(`INSERT INTO sessions (id, user_id, source, is_active) VALUES ($1, $2, 'web', false)`, [
      randomUUID(),
      userId,
    ]);
    if (s.userPin !== null)
      await q(`INSERT INTO llm_client_pins (user_id, source, client) VALUES ($1, 'web', $2)`, [userId, s.userPin]);
    if (s.lease !== 'none') {
      const leaseOwner = s.lease === 'free' ? null : s.lease === 'busy' ? owner : `other-${randomUUID()}`;
      await q(
        `INSERT INTO session_leases (session_id, owner, epoch, expires_at)
         VALUES ($1, $2, $3, now() + CASE WHEN $4::boolean THEN interval '-1 minute' ELSE interval '1 hour' END)`,
        [sessionId, leaseOwner, s.epoch, s.lease === 'expired'],
      );
    }
    const frameIds: string[] = [];
    let rootId: string | null = null;
    for (const [i, f] of s.frames.entries()) {
      const frameId = randomUUID();
      frameIds.push(frameId);
      const child = i > 0 && rootId !== null && f.active;
      await q(
        `INSERT INTO stack_frames (id, session_id, parent_frame_id, agent_id, depth, status, epoch)
         VALUES ($1, $2, $3, 'main', $4, $5, 1)`,
        [frameId, sessionId, child ? rootId : null, child ? 1 : 0, f.active || i === 0 ? 'active' : 'closed'],
      );
      if (i === 0) rootId = frameId;
      const messageIds: string[] = [];
      for (const m of f.messages) {
        const id = randomUUID();
        messageIds.push(id);
        await q(
          `INSERT INTO chat_history (id, session_id, frame_id, role, content, status, epoch)
           VALUES ($1, $2, $3, $4, $5, $6, 1)`,
          [id, sessionId, frameId, m.role, m.content, m.status],
        );
        for (const [idx, c] of m.calls.entries())
          await q(
            `INSERT INTO tool_calls (id, session_id, frame_id, message_id, idx, llm_call_id, name, arguments, status, epoch)
             VALUES ($1, $2, $3, $4, $5, $6, $7, '{}', $8, 1)`,
            [randomUUID(), sessionId, frameId, id, idx, `call_${idx}`, c.name, c.status],
          );
      }
      if (f.grant !== null)
        await q(`INSERT INTO tool_grants (session_id, frame_id, group_name) VALUES ($1, $2, $3)`, [
          sessionId,
          frameId,
          f.grant,
        ]);
      if (f.compaction !== null && messageIds.length > 0)
        await q(
          `INSERT INTO compaction_summaries (session_id, frame_id, summary, boundary_message_id) VALUES ($1, $2, $3, $4)`,
          [sessionId, frameId, f.compaction, messageIds[0]],
        );
    }
    if (s.sessionGrant !== null)
      await q(`INSERT INTO tool_grants (session_id, frame_id, group_name) VALUES ($1, NULL, $2)`, [
        sessionId,
        s.sessionGrant,
      ]);
    if (s.scratchpad !== null)
      await q(`INSERT INTO session_scratchpad (scratchpad_session_id, key, value) VALUES ($1, $2, $3)`, [
        sessionId,
        s.scratchpad.key,
        s.scratchpad.value,
      ]);
    if (s.userAgent !== null)
      await q(`INSERT INTO user_agents (user_id, agent_id, prompt) VALUES ($1, 'main', $2)`, [
        userId,
        s.userAgent.prompt,
      ]);
    for (const item of s.inbox)
      await q(
        `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery, status, tool_result,
                                    rewind_kind, rewind_message_id, is_synthetic)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        [
          randomUUID(),
          sessionId,
          userId,
          randomUUID(),
          item.content,
          item.delivery,
          item.status,
          item.toolResult ? json({ tool_name: 'task_completed', arguments_text: '{}', result: 'r' }) : null,
          item.rewind,
          item.rewind ? randomUUID() : null,
          item.toolResult,
        ],
      );
    return { sessionId, frameIds };
  }

  it('equals the start read taken after it when it takes a free lease of a finished session; none otherwise', async () => {
    let compared = 0;
    await fc.assert(
      fc.asyncProperty(state, async (s) => {
        const userId = randomUUID();
        const { sessionId, frameIds } = await seed(userId, s);
        const clientMessageId = `c-${randomUUID()}`;
        if (s.submit.duplicate)
          await q(
            `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery)
             VALUES ($1, $2, $3, $4, 'first', 'queue')`,
            [randomUUID(), sessionId, userId, clientMessageId],
          );
        // The carried rows are the tables' rows (as HistoryCarry keeps them); one id of a frame not of this session.
        const reader = new PgSessionStore(ds, { owner, epoch: 0 }, () => undefined);
        const carriedFrames = frameIds.filter((_, i) => s.carry[i]);
        const carried = new Map(
          await Promise.all(
            carriedFrames.map(
              async (id) =>
                [
                  id,
                  {
                    messages: await reader.listMessages(id, { includeFailed: true }),
                    toolCalls: await reader.listToolCalls(id),
                  },
                ] as const,
            ),
          ),
        );
        const r = await inbox.submitToActive(
          { userId, source: 'web', role: s.submit.role },
          {
            clientMessageId,
            content: s.submit.content,
            attachments: s.submit.attachments,
            delivery: s.submit.delivery,
            isSynthetic: s.submit.isSynthetic,
          },
          { owner, ttlMs: TTL, busy: s.lease === 'busy' ? [sessionId] : [], carried: [...carriedFrames, randomUUID()] },
        );
        expect(r).not.toBeNull();
        const takes = !s.submit.duplicate && (s.lease === 'none' || s.lease === 'free') && s.turnState === 'finished';
        expect(r?.start != null).toBe(takes);
        expect(r?.lease != null).toBe(
          !s.submit.duplicate && (s.lease === 'none' || s.lease === 'free' || s.lease === 'expired'),
        );
        if (!r?.start || !r.lease) return;
        const fence = { owner, epoch: r.lease.epoch };
        const given = s.carryValid ? carried : new Map();
        const primed = new PgSessionStore(ds, fence, () => undefined);
        const early = primed.startFrom(sessionId, r.start.row, r.start.carried, given);
        const read = await new PgSessionStore(ds, fence, () => undefined).startTurn(sessionId, given);
        const active = new Set(read.frames.map((f) => f.id));
        if (!s.carryValid && carriedFrames.some((id) => active.has(id))) {
          // The carry did not survive the take: the driver reads instead.
          expect(early).toBeNull();
          return;
        }
        expect(early).not.toBeNull();
        expect(read.complete).toBe(true);
        expect(read.inbox.map((i) => i.id)).toContain(r.messageId);
        expect(comparable(early as TurnStart)).toEqual(comparable(read));
        compared++;
        // The primed store answers the turn's first reads without asking Postgres.
        expect(await primed.getSession(sessionId)).toEqual(read.session);
        expect(await primed.listInbox(sessionId)).toEqual(read.inbox);
        expect(await primed.listActiveFrames(sessionId)).toEqual(read.frames);
      }),
      { seed: SEED, numRuns: RUNS },
    );
    // The generator reaches the case: some runs compared a primed start read (not all skipped).
    expect(compared).toBeGreaterThan(0);
    console.log(`submit start: ${compared} of ${RUNS} runs compared a primed start read`);
  });

  it('a driver that took and let go of the lease while the statement waited: no start read (its snapshot missed that driver)', async () => {
    const userId = randomUUID();
    const { sessionId } = await seed(userId, {
      ...fc.sample(state, { seed: SEED, numRuns: 1 })[0],
      turnState: 'finished',
      lease: 'free',
      epoch: 1,
      frames: [],
      inbox: [],
      submit: {
        content: 'hi',
        attachments: undefined,
        delivery: 'queue',
        isSynthetic: false,
        role: 'user',
        duplicate: false,
      },
    });
    const pool = (ds.driver as unknown as { master: { connect: () => Promise<PgClient> } }).master;
    type PgClient = { query: (t: string, v?: unknown[]) => Promise<unknown>; release: () => void };
    const other = await pool.connect();
    try {
      // Another worker's turn, in flight on the lease row: the submit's take waits for it.
      await other.query('BEGIN');
      await other.query(`UPDATE session_leases SET epoch = epoch + 1, owner = 'w2' WHERE session_id = $1`, [sessionId]);
      const submitted = inbox.submitToActive(
        { userId, source: 'web', role: 'user' },
        { clientMessageId: `c-${randomUUID()}`, content: 'hi', delivery: 'queue', isSynthetic: false },
        { owner, ttlMs: TTL, busy: [], carried: [] },
      );
      await new Promise((res) => setTimeout(res, 200));
      // That worker writes and lets the lease go (one transaction here), then the submit goes on.
      const frameId = randomUUID();
      await other.query(
        `INSERT INTO stack_frames (id, session_id, agent_id, depth, status, epoch) VALUES ($1, $2, 'main', 0, 'active', 2)`,
        [frameId, sessionId],
      );
      await other.query(`UPDATE session_leases SET owner = NULL WHERE session_id = $1`, [sessionId]);
      await other.query('COMMIT');
      const r = await submitted;
      expect(r?.lease?.epoch).toBe(3);
      expect(r?.start ?? null).toBeNull();
      // The driver's own read sees that worker's frame.
      const read = await new PgSessionStore(ds, { owner, epoch: 3 }, () => undefined).startTurn(sessionId);
      expect(read.frames.map((f) => f.id)).toEqual([frameId]);
    } finally {
      other.release();
    }
  });
});
