import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { deepToPgText, pgParams } from '@skald/persistence/pg-text';
import { nextTurnItem, runTurn, type LoopDeps, type SessionEventDraft } from '@skald/agent-loop';
import type { CommittedEvent } from '../loop-adapters/session-store/committed-event';
import { PgSessionStore } from '../loop-adapters/session-store/pg-session-store';
import { InboxRepository } from './inbox.repository';

jest.setTimeout(300_000);

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.FC_RUNS ?? 300);
const TTL = 60_000;
const AT = new Date('2026-06-01T10:00:00.123Z');

const text = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.string({
    unit: fc.constantFrom('\u0000', '\ud800', '\udc00', '\uffff', '\u2028', 'x', '\\', '"', "'", '\n', 'é'),
    maxLength: 6,
  }),
);

const state = fc.record({
  turnState: fc.constantFrom('finished', 'finished', 'finished', 'finished', 'running', 'parked'),
  stop: fc.constantFrom(false, false, false, true),
  ownerRole: fc.constantFrom('user', 'admin'),
  /** The lease before the submit: none, released, held by a live driver, expired, held in this worker's name (busy). */
  lease: fc.constantFrom('none', 'free', 'free', 'free', 'live', 'expired', 'busy'),
  epoch: fc.integer({ min: 1, max: 5 }),
  lastSeq: fc.integer({ min: 0, max: 7 }),
  /** frames[0] is the root (active); later ones active children or closed roots of earlier turns. */
  frames: fc.array(
    fc.record({
      active: fc.boolean(),
      messages: fc.array(
        fc.record({
          role: fc.constantFrom('user', 'assistant', 'assistant', 'agent'),
          status: fc.constantFrom('ok', 'ok', 'ok', 'failed', 'superseded'),
          content: text,
          call: fc.option(fc.constantFrom('done', 'running', 'awaiting_human', 'failed')),
        }),
        { maxLength: 4 },
      ),
    }),
    { maxLength: 3 },
  ),
  /** Other inbox rows of the session (queued ones are still waiting). */
  inbox: fc.array(
    fc.record({
      status: fc.constantFrom('queued', 'entered', 'entered', 'discarded'),
      delivery: fc.constantFrom('steer', 'queue', 'interrupt'),
      content: text,
      toolResult: fc.boolean(),
      rewind: fc.option(fc.constantFrom('regenerate', 'edit')),
    }),
    { maxLength: 2 },
  ),
  submit: fc.record({
    content: text,
    attachments: fc.option(
      fc.array(
        fc.record(
          { path: text, name: text, mimetype: fc.constant('text/plain'), filesize: fc.nat(99999) },
          { requiredKeys: ['path', 'name'] },
        ),
        { maxLength: 2 },
      ),
      { nil: undefined },
    ),
    delivery: fc.constantFrom('steer', 'queue', 'queue', 'interrupt'),
    isSynthetic: fc.boolean(),
    role: fc.constantFrom('user', 'admin'),
    duplicate: fc.constantFrom(false, false, false, false, true),
  }),
});

type State = typeof state extends fc.Arbitrary<infer T> ? T : never;

/**
 * Whether the submit's statement may make the turn's first commit for this state: the lease free
 * (or never taken), the turn finished, no stop, not an interrupt, not a duplicate, nothing else
 * queued, and the root frame (if any) ends with a live row of the model (no orphan).
 */
function narrowedCase(s: State): boolean {
  const root = s.frames[0];
  const live = root ? root.messages.filter((m) => m.status === 'ok') : [];
  return (
    !s.submit.duplicate &&
    // A synthetic message is not echoed: the loop enters it.
    !s.submit.isSynthetic &&
    (s.lease === 'none' || s.lease === 'free') &&
    s.turnState === 'finished' &&
    !s.stop &&
    s.submit.delivery !== 'interrupt' &&
    !s.inbox.some((i) => i.status === 'queued') &&
    (live.length === 0 || live[live.length - 1].role === 'assistant')
  );
}

/** Ids of one world: the same sequence in both worlds, told apart by an 8-hex prefix. */
class World {
  readonly prefix = randomBytes(4).toString('hex');
  private n = 0;
  id(): string {
    this.n++;
    return `${this.prefix}-0000-4000-8000-${this.n.toString(16).padStart(12, '0')}`;
  }
}

const json = (v: unknown): string => JSON.stringify(deepToPgText(v));

/**
 * The submit's statement making the turn's first commit (InboxRepository.submitToActive with
 * `enter`) against today's two steps — the submit without it, then the loop's own first commit
 * (runTurn with the inbox item, on PgSessionStore, stopped right after that commit) — over
 * generated sessions: previous turns finished / running / parked, a stop recorded, root frames
 * with live, failed and superseded rows of every role (orphans or not), child and closed frames,
 * calls, queued / entered / discarded items (system deliveries, rewinds, interrupts), the lease
 * none / free / live / expired / held here, duplicates, poison text (NUL, lone surrogates, U+FFFF,
 * U+2028, quotes, backslashes) in content and attachments. Every table a first commit touches
 * (sessions, session_inbox, stack_frames, chat_history, tool_calls, session_events,
 * session_leases, llm_usage) is the same afterwards, row for row; where the statement did not
 * enter the message it wrote exactly what the submit alone writes. The statement enters exactly in
 * the narrowed case (`narrowedCase`), and the store it primes answers the turn's first reads as
 * Postgres does.
 */
describe('InboxRepository.submitToActive: the first commit in the submit', () => {
  let ds: DataSource;
  let inbox: InboxRepository;
  const owner = `submit-first-${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 4 } });
    await ds.initialize();
    inbox = new InboxRepository(ds);
    console.log(`submit first commit: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  const q = (sql: string, params: unknown[]) => ds.query(sql, pgParams(params));

  async function seed(w: World, s: State): Promise<{ userId: string; sessionId: string }> {
    const userId = w.id();
    const sessionId = w.id();
    await q(
      `INSERT INTO sessions (id, user_id, source, owner_role, turn_state, stop_requested_at, is_active, last_seq, turn_seq)
       VALUES ($1, $2, 'web', $3, $4, CASE WHEN $5::boolean THEN now() END, true, $6, $6)`,
      [sessionId, userId, s.ownerRole, s.turnState, s.stop, s.lastSeq],
    );
    for (let i = 1; i <= s.lastSeq; i++)
      await q(`INSERT INTO session_events (session_id, seq, type, payload) VALUES ($1, $2, 'done', '{}')`, [
        sessionId,
        i,
      ]);
    await q(`INSERT INTO sessions (id, user_id, source, is_active) VALUES ($1, $2, 'web', false)`, [w.id(), userId]);
    if (s.lease !== 'none') {
      const leaseOwner = s.lease === 'free' ? null : s.lease === 'busy' ? owner : 'other-worker';
      await q(
        `INSERT INTO session_leases (session_id, owner, epoch, expires_at)
         VALUES ($1, $2, $3, now() + CASE WHEN $4::boolean THEN interval '-1 minute' ELSE interval '1 hour' END)`,
        [sessionId, leaseOwner, s.epoch, s.lease === 'expired'],
      );
    }
    let rootId: string | null = null;
    for (const [i, f] of s.frames.entries()) {
      const frameId = w.id();
      const child = i > 0 && rootId !== null && f.active;
      await q(
        `INSERT INTO stack_frames (id, session_id, parent_frame_id, agent_id, depth, status, epoch)
         VALUES ($1, $2, $3, 'main', $4, $5, 1)`,
        [frameId, sessionId, child ? rootId : null, child ? 1 : 0, i === 0 || child ? 'active' : 'closed'],
      );
      if (i === 0) rootId = frameId;
      for (const m of f.messages) {
        const id = w.id();
        await q(
          `INSERT INTO chat_history (id, session_id, frame_id, role, content, status, epoch)
           VALUES ($1, $2, $3, $4, $5, $6, 1)`,
          [id, sessionId, frameId, m.role, m.content, m.status],
        );
        if (m.call !== null)
          await q(
            `INSERT INTO tool_calls (id, session_id, frame_id, message_id, idx, llm_call_id, name, arguments, status, epoch)
             VALUES ($1, $2, $3, $4, 0, 'call_0', 'read_file', '{}', $5, 1)`,
            [w.id(), sessionId, frameId, id, m.call],
          );
      }
    }
    for (const item of s.inbox)
      await q(
        `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery, status, settled_at,
                                    tool_result, rewind_kind, rewind_message_id, is_synthetic)
         VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $7 <> 'queued' THEN now() END, $8, $9, $10, $11)`,
        [
          w.id(),
          sessionId,
          userId,
          `c-${w.id()}`,
          item.content,
          item.delivery,
          item.status,
          item.toolResult ? json({ tool_name: 'task_completed', arguments_text: '{}', result: 'r' }) : null,
          item.rewind,
          item.rewind ? w.id() : null,
          item.toolResult,
        ],
      );
    if (s.submit.duplicate)
      await q(
        `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery)
         VALUES ($1, $2, $3, 'the-message', 'first', 'queue')`,
        [w.id(), sessionId, userId],
      );
    return { userId, sessionId };
  }

  /** Every row a first commit can touch, for the world's user, in insertion order (ids as stored). */
  async function dump(userId: string): Promise<Record<string, unknown[]>> {
    // Seeded rows are created now(); the entered row at AT (the time the loop's clock gives).
    const sessions = `(SELECT id FROM sessions WHERE user_id = $1)`;
    const rows = (sql: string) => ds.query<unknown[]>(sql, sql.includes('$2') ? [userId, AT.toISOString()] : [userId]);
    return {
      sessions: await rows(
        `SELECT id, user_id, source, agent_id, owner_role, is_active, turn_state, turn_id, stop_requested_at IS NOT NULL AS stop,
                last_seq, turn_seq, commit_failures FROM sessions WHERE user_id = $1 ORDER BY id`,
      ),
      inbox: await rows(
        `SELECT id, session_id, client_message_id, content, attachments, delivery, is_synthetic, status,
                settled_at IS NOT NULL AS settled, tool_result, rewind_kind, rewind_message_id
           FROM session_inbox WHERE user_id = $1 ORDER BY ord`,
      ),
      frames: await rows(
        `SELECT id, session_id, parent_frame_id, parent_tool_call_id, agent_id, depth, status, client, epoch
           FROM stack_frames WHERE session_id IN ${sessions} ORDER BY ord`,
      ),
      messages: await rows(
        `SELECT id, session_id, frame_id, role, content, reasoning, is_synthetic, status, metadata, client_message_id,
                input_tokens, output_tokens, epoch, created_at = $2::timestamptz AS created_now, cost_usd, tokens_estimated, llm_client, llm_model,
                superseded_at IS NOT NULL AS superseded
           FROM chat_history WHERE session_id IN ${sessions} ORDER BY ord`,
      ),
      calls: await rows(
        `SELECT id, frame_id, message_id, status, result, epoch FROM tool_calls WHERE session_id IN ${sessions} ORDER BY ord`,
      ),
      events: await rows(
        `SELECT session_id, seq, type, payload FROM session_events WHERE session_id IN ${sessions} ORDER BY session_id, seq`,
      ),
      leases: await rows(
        `SELECT session_id, owner, epoch, expires_at > now() AS live FROM session_leases WHERE session_id IN ${sessions}`,
      ),
      usage: await rows(`SELECT count(*)::int AS n FROM llm_usage WHERE user_id = $1`),
    };
  }

  /** A dump with the world's ids (and its message id) spelled alike. */
  const canonical = (d: unknown, w: World, messageId: string): unknown =>
    JSON.parse(JSON.stringify(d).split(w.prefix).join('WORLD').split(messageId).join('MESSAGE'));

  const submission = (s: State) => ({
    clientMessageId: 'the-message',
    content: s.submit.content,
    attachments: s.submit.attachments,
    delivery: s.submit.delivery,
    isSynthetic: s.submit.isSynthetic,
  });

  /** Today's first commit: the loop's runTurn on PgSessionStore, stopped right after its first commit. */
  async function loopFirstCommit(
    w: World,
    sessionId: string,
    inboxId: string,
    epoch: number,
  ): Promise<{ committed: CommittedEvent[]; mutations: unknown[] }> {
    const committed: CommittedEvent[] = [];
    const store = new PgSessionStore(ds, { owner, epoch }, (evs) => committed.push(...evs));
    const start = await store.startTurn(sessionId);
    // What the driver would do with this read: a finished turn, no stop, this item next.
    expect(start.session.turnState).toBe('finished');
    expect(start.stop).toBe(false);
    expect(nextTurnItem(start.inbox)?.id).toBe(inboxId);
    const STOP = new Error('stopped after the first commit');
    const mutations: unknown[] = [];
    const stopping = new Proxy(store, {
      get(target, key) {
        if (key === 'commit')
          return async (sid: string, ms: unknown[], evs: SessionEventDraft[]) => {
            mutations.push(...ms);
            await target.commit(sid, ms as never, evs);
            throw STOP;
          };
        const v = (target as unknown as Record<string | symbol, unknown>)[key];
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const deps = {
      store: stopping,
      ids: { newId: () => w.id() },
      clock: { now: () => AT, timeZone: () => 'UTC' },
    } as unknown as LoopDeps;
    await expect(runTurn(deps, { sessionId, input: { kind: 'inbox', inboxId } })).rejects.toBe(STOP);
    return { committed, mutations };
  }

  it('writes what the submit and the loop first commit write, exactly in the narrowed case', async () => {
    let entered = 0;
    let opened = 0;
    await fc.assert(
      fc.asyncProperty(state, async (s) => {
        const a = new World();
        const b = new World();
        const seededA = await seed(a, s);
        const seededB = await seed(b, s);
        const take = (w: World, enter: boolean) => ({
          owner,
          ttlMs: TTL,
          busy: s.lease === 'busy' ? [w === a ? seededA.sessionId : seededB.sessionId] : [],
          carried: [],
          enter: enter ? { frameId: w.id(), at: AT } : null,
        });
        // The new path: one statement.
        const ra = await inbox.submitToActive(
          { userId: seededA.userId, source: 'web', role: s.submit.role },
          submission(s),
          take(a, true),
        );
        // Today's: the submit, then (when the driver would start a turn from this message) its first commit.
        const rb = await inbox.submitToActive(
          { userId: seededB.userId, source: 'web', role: s.submit.role },
          submission(s),
          take(b, false),
        );
        if (!ra || !rb) throw new Error('no active session');
        const aEntered = ra.start?.entered ?? null;
        expect(aEntered !== null).toBe(narrowedCase(s));
        expect(rb.start?.entered ?? null).toBeNull();
        expect({
          ...ra,
          messageId: 'M',
          sessionId: 'S',
          lease: ra.lease && { ...ra.lease, sessionId: 'S' },
          start: null,
        }).toEqual({
          ...rb,
          messageId: 'M',
          sessionId: 'S',
          lease: rb.lease && { ...rb.lease, sessionId: 'S' },
          start: null,
        });
        if (aEntered) {
          entered++;
          if (aEntered.opened) opened++;
          if (!rb.lease) throw new Error('today would not have taken the lease');
          const { committed } = await loopFirstCommit(b, seededB.sessionId, rb.messageId, rb.lease.epoch);
          // The echo announced: the same event, the same seq.
          expect(committed.map((e) => ({ seq: e.seq, event: e.event }))).toEqual([
            { seq: aEntered.event.seq, event: { ...aEntered.event.event, message_id: rb.messageId } },
          ]);
          expect(aEntered.event.userId).toBe(seededA.userId);
          // The store primed with the statement's read and its first commit answers as Postgres does.
          const primed = new PgSessionStore(ds, { owner, epoch: ra.lease?.epoch ?? 0 }, () => undefined);
          expect(primed.startFrom(seededA.sessionId, ra.start!.row, [], new Map(), ra.start!.at)).not.toBeNull();
          primed.primeEntered(aEntered);
          const fresh = new PgSessionStore(ds, { owner, epoch: 0 }, () => undefined);
          expect(await primed.getSession(seededA.sessionId)).toEqual(await fresh.getSession(seededA.sessionId));
          expect(await primed.listInbox(seededA.sessionId)).toEqual(await fresh.listInbox(seededA.sessionId));
          expect(await primed.listActiveFrames(seededA.sessionId)).toEqual(
            await fresh.listActiveFrames(seededA.sessionId),
          );
          expect(await primed.listMessages(aEntered.frame.id, { includeFailed: true })).toEqual(
            await fresh.listMessages(aEntered.frame.id, { includeFailed: true }),
          );
        }
        expect(canonical(await dump(seededA.userId), a, ra.messageId)).toEqual(
          canonical(await dump(seededB.userId), b, rb.messageId),
        );
      }),
      { seed: SEED, numRuns: RUNS },
    );
    // The generator reaches the case, with and without a root frame to open.
    expect(entered).toBeGreaterThan(0);
    expect(opened).toBeGreaterThan(0);
    expect(opened).toBeLessThan(entered);
    console.log(`submit first commit: ${entered} of ${RUNS} runs entered in the statement (${opened} opened the root)`);
  });
});
