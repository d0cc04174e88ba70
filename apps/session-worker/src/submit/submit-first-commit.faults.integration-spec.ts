import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { LeaseLostError, recoverTurn, runTurn, type LoopDeps } from '@skald/agent-loop';
import { LoopHarness } from '@skald/agent-loop/testing';
import { Lease, LeaseRepository } from '../lease/lease.repository';
import { SessionsRepository } from '../sessions/sessions.repository';
import { TurnStateRepository } from '../sessions/turn-state.repository';
import type { CommittedEvent } from '../loop-adapters/session-store/committed-event';
import { PgSessionStore } from '../loop-adapters/session-store/pg-session-store';
import { statementWaitingOn } from '../testing-fixtures/lock-waits';
import type { PrimedStart } from './entered-first';
import { InboxRepository } from './inbox.repository';
import { SubmitService, type Submission } from './submit.service';

jest.setTimeout(120_000);

const TTL = 60_000;

/**
 * The first commit in the submit's statement under faults (RELIABILITY.md I1–I5): a statement
 * killed while it waits writes nothing; a worker that dies after the statement, before any model
 * call, leaves a running turn that the next driver recovers exactly once — the message neither lost
 * nor entered twice, seqs without gaps or duplicates, each writer under its own epoch, the dead
 * writer fenced; concurrent submits and retries to one session, from one worker and from two,
 * enter at most one message in a statement, store every message once, hand out one lease.
 */
describe('the first commit in the submit: faults', () => {
  let ds: DataSource;
  let sessions: SessionsRepository;
  let inbox: InboxRepository;
  let turnState: TurnStateRepository;
  let leases: LeaseRepository;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 12 } });
    await ds.initialize();
    sessions = new SessionsRepository(ds);
    inbox = new InboxRepository(ds);
    turnState = new TurnStateRepository(ds);
    leases = new LeaseRepository(ds);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  type Handed = { lease: Lease; primed: PrimedStart | null };

  /**
   * A worker: the real SubmitService over a driver that drives nothing and records what it is handed
   * and the echoes announced (`announceEntered`, with what another connection sees committed then).
   */
  function worker(owner: string) {
    const busy = new Set<string>();
    const handed: Handed[] = [];
    const echoes: Array<{ seq: number; committed: Promise<number[]> }> = [];
    /** What happened, in order: 'echo' (announced), 'driven' (driveWith); the test adds 'answered'. */
    const order: string[] = [];
    const driver = {
      leaseAsk: () => ({ owner, ttlMs: TTL, busy: [...busy], enter: { frameId: randomUUID(), at: new Date() } }),
      looksAgain: (sessionId: string) => busy.has(sessionId),
      announceEntered: (primed: PrimedStart) => {
        const e = primed.entered!.event;
        primed.announced = true;
        order.push('echo');
        echoes.push({
          seq: e.seq,
          // read on another connection at once: the event row must already be committed
          committed: ds
            .query<Array<{ seq: number }>>(`SELECT seq::int FROM session_events WHERE session_id = $1`, [e.sessionId])
            .then((r) => r.map((x) => x.seq)),
        });
      },
      driveWith: (lease: Lease, primed: PrimedStart | null = null) => {
        order.push('driven');
        handed.push({ lease, primed });
        busy.add(lease.sessionId);
        return Promise.resolve();
      },
      drive: () => Promise.resolve(),
    };
    const bus = { publish: (_topic: unknown, _p: unknown) => undefined };
    const service = new SubmitService(sessions, inbox, driver as never, bus as never, turnState, {} as never, leases);
    return { service, handed, echoes, order, settle: () => new Promise((r) => setImmediate(r)) };
  }

  async function newSession(): Promise<{ userId: string; sessionId: string }> {
    const userId = randomUUID();
    const sessionId = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source, owner_role) VALUES ($1, $2, 'web', 'user')`, [
      sessionId,
      userId,
    ]);
    return { userId, sessionId };
  }

  const message = (userId: string, clientMessageId: string, content = 'hello'): Submission => ({
    actor: { userId, role: 'user' },
    source: 'web',
    clientMessageId,
    content,
    delivery: 'queue',
    isSynthetic: false,
  });

  /** What the session's turn wrote: its rows, in order. */
  async function rows(sessionId: string) {
    const [session] = await ds.query<Array<Record<string, unknown>>>(
      `SELECT owner_role, turn_state, turn_id, last_seq::int, turn_seq::int FROM sessions WHERE id = $1`,
      [sessionId],
    );
    const [lease] = await ds.query<Array<{ owner: string | null; epoch: number }>>(
      `SELECT owner, epoch::int FROM session_leases WHERE session_id = $1`,
      [sessionId],
    );
    return {
      session,
      inbox: await ds.query<Array<{ id: string; client_message_id: string; status: string }>>(
        `SELECT id, client_message_id, status FROM session_inbox WHERE session_id = $1 ORDER BY ord`,
        [sessionId],
      ),
      frames: await ds.query<unknown[]>(
        `SELECT id, depth, status, epoch::int FROM stack_frames WHERE session_id = $1`,
        [sessionId],
      ),
      messages: await ds.query<Array<{ id: string; role: string; content: string; status: string; epoch: number }>>(
        `SELECT id, role, content, status, epoch::int FROM chat_history WHERE session_id = $1 ORDER BY ord`,
        [sessionId],
      ),
      events: await ds.query<Array<{ seq: number; type: string }>>(
        `SELECT seq::int, type FROM session_events WHERE session_id = $1 ORDER BY seq`,
        [sessionId],
      ),
      lease: lease as { owner: string | null; epoch: number } | undefined,
    };
  }

  /** The harness's fakes around a Postgres store, with fresh uuids (the rows are shared by every test). */
  const withStore = (h: LoopHarness, store: PgSessionStore): LoopDeps => ({
    ...h.deps,
    store,
    ids: { newId: () => randomUUID() },
  });

  /** I5: seqs 1..n, no gap, no duplicate. */
  const contiguous = (events: Array<{ seq: number }>) =>
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));

  it("the echo of a message the statement entered is announced in the submit's pass, after its commit, before the answer and the turn", async () => {
    const { userId, sessionId } = await newSession();
    const w = worker('w1');
    const r = await w.service.submit(message(userId, 'echo-now'));
    w.order.push('answered');
    expect(w.echoes).toHaveLength(1);
    expect(w.echoes[0].seq).toBe(1);
    expect(await w.echoes[0].committed).toEqual([1]);
    await w.settle();
    // announced when the statement returned: before the submit answered, before the driver ran
    expect(w.order).toEqual(['echo', 'answered', 'driven']);
    // the driver gets the entered start, marked announced (it does not announce it again)
    expect(w.handed).toHaveLength(1);
    expect(w.handed[0].primed?.entered?.event.seq).toBe(1);
    expect(w.handed[0].primed?.announced).toBe(true);
    expect(r).toMatchObject({ session_id: sessionId, duplicate: false });
    // a duplicate enters nothing and announces nothing
    await w.service.submit(message(userId, 'echo-now'));
    await w.settle();
    expect(w.echoes).toHaveLength(1);
  });

  it('a submit killed while its statement waits on the lease row wrote nothing; its retry enters the message once', async () => {
    const { userId, sessionId } = await newSession();
    await ds.query(
      `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, NULL, 2, now() - interval '1 second')`,
      [sessionId],
    );
    const before = await rows(sessionId);
    const me = worker('w1');
    const s = message(userId, `kill-${randomUUID()}`);
    const holder = ds.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    const [{ pid: holderPid }] = await holder.query(`SELECT pg_backend_pid() AS pid`);
    await holder.query(`SELECT 1 FROM session_leases WHERE session_id = $1 FOR UPDATE`, [sessionId]);
    const pending = me.service.submit(s).then(
      () => 'acknowledged',
      () => 'failed',
    );
    // this test's submit only: a spec beside it may have the same statement waiting on its own lock
    const pid = await statementWaitingOn(
      ds,
      holderPid,
      'WITH s AS (%SELECT id FROM sessions WHERE user_id = $1::uuid AND source = $2::text AND is_active%',
    );
    await ds.query(`SELECT pg_terminate_backend($1)`, [pid]);
    expect(await pending).toBe('failed');
    await holder.commitTransaction();
    await holder.release();
    await me.settle();
    expect(me.handed).toEqual([]);
    expect(await rows(sessionId)).toEqual(before);
    expect(before.inbox).toEqual([]);

    const retried = await me.service.submit(s);
    const again = await me.service.submit(s);
    await me.settle();
    // the retry took the lease (its reply names this worker to the gateway), the duplicate did not
    expect(again).toEqual({ ...retried, duplicate: true, leased: false });
    expect(me.handed).toHaveLength(1);
    expect(me.handed[0].primed?.entered?.message.id).toBe(retried.message_id);
    const after = await rows(sessionId);
    expect(after.inbox).toEqual([{ id: retried.message_id, client_message_id: s.clientMessageId, status: 'entered' }]);
    expect(after.messages).toEqual([
      { id: retried.message_id, role: 'user', content: 'hello', status: 'ok', epoch: 3 },
    ]);
    expect(after.events).toEqual([{ seq: 1, type: 'user_message' }]);
    expect(after.session).toMatchObject({
      turn_state: 'running',
      turn_id: retried.message_id,
      last_seq: 1,
      turn_seq: 0,
    });
    expect(after.lease).toEqual({ owner: 'w1', epoch: 3 });
  });

  it.each([
    ['the worker died after the statement (its lease expires)', 'expire'],
    ['the worker would not drive it (draining: its lease released at once)', 'release'],
  ])('%s: the next driver recovers the turn exactly once, nothing lost or entered twice', async (_, how) => {
    const { userId, sessionId } = await newSession();
    const me = worker('w1');
    const s = message(userId, `crash-${randomUUID()}`, 'what is 6 times 7?');
    const submitted = await me.service.submit(s);
    await me.settle();
    const [{ lease: first, primed }] = me.handed;
    expect(primed?.entered?.event).toMatchObject({ seq: 1, event: { type: 'user_message', content: s.content } });
    // The process is gone before any model call: nothing after the statement happened.
    if (how === 'expire')
      await ds.query(`UPDATE session_leases SET expires_at = now() - interval '1 millisecond' WHERE session_id = $1`, [
        sessionId,
      ]);
    else await leases.release(first);

    const next = await leases.acquire(sessionId, 'w2', TTL);
    expect(next).toMatchObject({ epoch: first.epoch + 1, tookOver: how === 'expire' });
    const announced: CommittedEvent[] = [];
    const store = new PgSessionStore(ds, { owner: 'w2', epoch: next!.epoch }, (evs) => announced.push(...evs));
    const start = await store.startTurn(sessionId);
    expect(start.session).toMatchObject({ turnState: 'running', turnId: submitted.message_id });
    const h = new LoopHarness({ script: [{ content: '42' }] });
    const outcome = await recoverTurn(withStore(h, store), { sessionId });
    expect(outcome).toMatchObject({ kind: 'final', content: '42' });
    // One model call, with the user's message in it once.
    expect(h.model.calls).toHaveLength(1);
    const asked = h.model.calls[0].messages.filter((m) => m.role === 'user' && m.content === s.content);
    expect(asked).toHaveLength(1);

    const after = await rows(sessionId);
    expect(after.inbox).toEqual([
      { id: submitted.message_id, client_message_id: s.clientMessageId, status: 'entered' },
    ]);
    expect(after.messages.map((m) => [m.role, m.content, m.epoch])).toEqual([
      ['user', s.content, first.epoch],
      ['assistant', '42', next!.epoch],
    ]);
    expect(after.events.map((e) => e.type)).toEqual(['user_message', 'done']);
    contiguous(after.events);
    expect(announced.map((e) => e.seq)).toEqual([2]);
    expect(after.session).toMatchObject({ turn_state: 'finished', turn_id: submitted.message_id, last_seq: 2 });

    // I3: the first writer's epoch is fenced out — its late commit writes nothing.
    const stale = new PgSessionStore(ds, { owner: 'w1', epoch: first.epoch }, () => undefined);
    await expect(
      stale.commit(
        sessionId,
        [{ kind: 'setTurnState', sessionId, state: 'running' }],
        [{ type: 'error', code: 'late', message: 'late' }],
      ),
    ).rejects.toBeInstanceOf(LeaseLostError);
    // The client's retry of the same message stores nothing new.
    await leases.releaseAndCheckWork(next!);
    expect(await me.service.submit(s)).toMatchObject({ message_id: submitted.message_id, duplicate: true });
    expect(await rows(sessionId)).toEqual({ ...after, lease: { owner: null, epoch: next!.epoch } });
  });

  it('the turn the submitting worker drives from the entered message writes what the recovered one writes', async () => {
    const outcomes: unknown[] = [];
    for (const recover of [false, true]) {
      const { userId, sessionId } = await newSession();
      const me = worker('w1');
      const s = message(userId, `drive-${randomUUID()}`, 'ping');
      await me.service.submit(s);
      await me.settle();
      const [{ lease, primed }] = me.handed;
      const store = new PgSessionStore(ds, { owner: 'w1', epoch: lease.epoch }, () => undefined);
      const h = new LoopHarness({ script: [{ content: 'pong' }] });
      const deps = withStore(h, store);
      if (recover) {
        await store.startTurn(sessionId);
        await recoverTurn(deps, { sessionId });
      } else {
        // The driver's way: the store primed with the statement's read and its first commit, no read of its own.
        const early = store.startFrom(sessionId, primed!.row, primed!.carried, new Map(), primed!.at);
        expect(early).not.toBeNull();
        store.primeEntered(primed!.entered!);
        const e = primed!.entered!;
        await runTurn(deps, { sessionId, input: { kind: 'entered', messageId: e.message.id, frameId: e.frame.id } });
      }
      const r = await rows(sessionId);
      contiguous(r.events);
      outcomes.push({
        model: h.model.calls.map((c) => c.messages),
        messages: r.messages.map((m) => [m.role, m.content, m.status]),
        events: r.events,
        session: { ...r.session, turn_id: 'T' },
      });
    }
    expect(outcomes[0]).toEqual(outcomes[1]);
  });

  it.each([
    ['held by a live driver of another worker', `'w2', 4, now() + interval '1 hour'`],
    ["expired in a dead worker's name", `'w2', 4, now() - interval '1 second'`],
  ])("a lease %s: the message is not entered by the statement (the driver's way runs)", async (_, lease) => {
    const { userId, sessionId } = await newSession();
    await ds.query(`INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, ${lease})`, [
      sessionId,
    ]);
    const me = worker('w1');
    const submitted = await me.service.submit(message(userId, `held-${randomUUID()}`));
    await me.settle();
    expect(me.handed.map((h) => h.primed?.entered ?? null).filter((e) => e !== null)).toEqual([]);
    const r = await rows(sessionId);
    expect(r.inbox).toEqual([expect.objectContaining({ id: submitted.message_id, status: 'queued' })]);
    expect(r.messages).toEqual([]);
    expect(r.events).toEqual([]);
    expect(r.session.turn_state).toBe('finished');
  });

  it('concurrent submits and retries to one session, from one worker and from two: one lease, at most one message entered by a statement, every message stored once', async () => {
    let enteredRounds = 0;
    for (let round = 0; round < 8; round++) {
      const { userId, sessionId } = await newSession();
      const workers = round < 4 ? [worker('w1')] : [worker('w1'), worker('w2')];
      const clients = ['a', 'b', 'c', 'd', 'e', 'f', 'a', 'a'];
      const answers = await Promise.all(
        clients.map((c, i) => workers[i % workers.length].service.submit(message(userId, c, `m-${c}`))),
      );
      await Promise.all(workers.map((w) => w.settle()));
      const handed = workers.flatMap((w) => w.handed);
      expect(handed).toHaveLength(1);
      const r = await rows(sessionId);
      expect(r.lease).toEqual({ owner: handed[0].lease.owner, epoch: 1 });
      expect(r.inbox.map((i) => i.client_message_id).sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
      expect(answers.filter((a) => !a.duplicate)).toHaveLength(6);
      for (const [i, a] of answers.entries())
        expect(a.message_id).toBe(r.inbox.find((x) => x.client_message_id === clients[i])!.id);
      const entered = r.inbox.filter((i) => i.status === 'entered');
      expect(entered.length).toBeLessThanOrEqual(1);
      // What was entered is exactly what the lease's taker was told, and nothing else was written.
      const told = handed[0].primed?.entered ?? null;
      expect(entered.map((i) => i.id)).toEqual(told ? [told.message.id] : []);
      expect(r.messages.map((m) => m.id)).toEqual(entered.map((i) => i.id));
      expect(r.events).toEqual(told ? [{ seq: 1, type: 'user_message' }] : []);
      expect(r.session.turn_state).toBe(told ? 'running' : 'finished');
      if (told) enteredRounds++;
    }
    console.log(`concurrent submits: ${enteredRounds} of 8 rounds entered a message in the statement`);
  });
});
