import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { topicOf, type Delivery } from '@skald/contracts';
import { toPgText } from '@skald/persistence/pg-text';
import { SessionsRepository } from '../sessions/sessions.repository';
import { TurnStateRepository } from '../sessions/turn-state.repository';
import { Lease, LeaseRepository } from '../lease/lease.repository';
import { InboxRepository } from './inbox.repository';
import { SUBMIT_NAME } from './submit-statement';

import { Submission, SubmitService } from './submit.service';
import { backendPid, statementWaitingOn } from '../testing-fixtures/lock-waits';

/**
 * The submit statement's opening, as `pg_stat_activity.query` shows it (the text is cut at
 * track_activity_query_size, 1 KiB: match its start).
 */
const SUBMIT_HEAD = 'WITH s AS (%SELECT id FROM sessions WHERE user_id = $1::uuid AND source = $2::text AND is_active%';

jest.setTimeout(180_000);

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.FC_RUNS ?? 40);

const SOURCES = ['web', 'telegram'] as const;
const ROLES = ['user', 'admin'] as const;
const CLIENT_IDS = ['c1', 'c2', 'c3', 'c\u0000x', 'c\ud800'];
const text = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.string({ unit: fc.constantFrom('\u0000', '\ud800', '\udc00', 'x', '\\', '"', "'"), maxLength: 6 }),
);

/** The sessions and inbox rows of one user before the submits (at most one active session per source). */
const userState = fc.record({
  sessions: fc.array(
    fc.record({ source: fc.constantFrom(...SOURCES), role: fc.constantFrom(...ROLES), active: fc.boolean() }),
    { maxLength: 4 },
  ),
  inbox: fc.array(
    fc.record({ pick: fc.nat(), client: fc.constantFrom(...CLIENT_IDS), regenerate: fc.boolean(), content: text }),
    { maxLength: 4 },
  ),
});

const submission = fc.record({
  source: fc.constantFrom(...SOURCES),
  role: fc.constantFrom(...ROLES),
  client: fc.constantFrom(...CLIENT_IDS),
  content: text,
  attachments: fc.option(
    fc.array(fc.record({ path: text, name: text, mimetype: fc.constant('text/plain') }), { maxLength: 2 }),
    {
      nil: undefined,
    },
  ),
  delivery: fc.constantFrom<Delivery>('steer', 'queue', 'interrupt'),
  isSynthetic: fc.boolean(),
});

type UserState = typeof userState extends fc.Arbitrary<infer T> ? T : never;

/**
 * `submit`'s one statement (InboxRepository.submitToActive, the long way only when no session is
 * active) against the three statements it replaces (SessionsRepository.active,
 * TurnStateRepository.recordOwnerRole, InboxRepository.store — the former `submit`): over generated
 * states (no session, an active one, inactive ones, duplicate client ids, regenerate rows, another
 * user's rows with the same client ids and sources, role changes) both leave the same rows and
 * answer the same; another user's rows are never touched. Then the crash property: a submit killed
 * mid-statement wrote nothing (not the role either) and was not acknowledged, and its retry stores
 * the message once; concurrent retries of one message store it once and all answer its id.
 */
describe('SubmitService.submit: one statement for the common case', () => {
  let ds: DataSource;
  let sessions: SessionsRepository;
  let inbox: InboxRepository;
  let turnState: TurnStateRepository;
  let service: SubmitService;
  const woken: string[] = [];

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 8 } });
    await ds.initialize();
    sessions = new SessionsRepository(ds);
    inbox = new InboxRepository(ds);
    turnState = new TurnStateRepository(ds);
    // No lease asked for here: the rows and answers of the message itself (the lease take has its
    // own differential spec below).
    const driver = { drive: async () => undefined, leaseAsk: () => null, looksAgain: () => false };
    const bus = { publish: (_topic: unknown, p: { session_id: string }) => woken.push(p.session_id) };
    service = new SubmitService(
      sessions,
      inbox,
      driver as never,
      bus as never,
      turnState,
      {} as never,
      new LeaseRepository(ds),
    );
    console.log(`submit one-statement: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  /** The former `submit`, statement for statement. */
  async function threeStatements(s: Submission) {
    const { id: sessionId } = await sessions.active({ userId: s.actor.userId, source: s.source });
    await turnState.recordOwnerRole(sessionId, s.actor.role);
    const stored = await inbox.store({
      userId: s.actor.userId,
      sessionId,
      clientMessageId: s.clientMessageId,
      content: s.content,
      attachments: s.attachments,
      delivery: s.delivery,
      isSynthetic: s.isSynthetic,
    });
    if (!stored.duplicate && s.delivery === 'interrupt') await turnState.requestStop(stored.sessionId);
    return { session_id: stored.sessionId, message_id: stored.messageId, duplicate: stored.duplicate };
  }

  /** Ids → labels that are equal across two worlds built from one generated state. */
  class Labels {
    private readonly byId = new Map<string, string>();
    private next = 0;
    set(id: string, label: string): void {
      this.byId.set(id, label);
    }
    of(id: string | null): string | null {
      if (id === null) return null;
      let l = this.byId.get(id);
      if (l === undefined) {
        l = `n${this.next++}`;
        this.byId.set(id, l);
      }
      return l;
    }
  }

  async function build(userId: string, state: UserState, labels: Labels, tag: string): Promise<void> {
    const ids: string[] = [];
    for (const [i, s] of state.sessions.entries()) {
      const id = randomUUID();
      const activeTaken = state.sessions.slice(0, i).some((p) => p.active && p.source === s.source);
      await ds.query(`INSERT INTO sessions (id, user_id, source, owner_role, is_active) VALUES ($1, $2, $3, $4, $5)`, [
        id,
        userId,
        s.source,
        s.role,
        s.active && !activeTaken,
      ]);
      labels.set(id, `${tag}s${i}`);
      ids.push(id);
    }
    if (ids.length === 0) return;
    const seen = new Set<string>();
    for (const [i, r] of state.inbox.entries()) {
      if (seen.has(r.client)) continue;
      seen.add(r.client);
      const id = randomUUID();
      const rewound = r.regenerate ? randomUUID() : null;
      await ds.query(
        `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery, rewind_kind, rewind_message_id)
         VALUES ($1, $2, $3, $4, $5, 'queue', $6, $7)`,
        [
          id,
          ids[r.pick % ids.length],
          userId,
          toPgText(r.client),
          toPgText(r.content),
          rewound && 'regenerate',
          rewound,
        ],
      );
      labels.set(id, `${tag}m${i}`);
      if (rewound) labels.set(rewound, `${tag}r${i}`);
    }
  }

  async function rows(userIds: string[], labels: Labels) {
    const ss: Array<{ id: string; user_id: string; source: string; is_active: boolean; owner_role: string }> =
      await ds.query(
        `SELECT id, user_id, source, is_active, owner_role, stop_requested_at IS NOT NULL AS stop
           FROM sessions WHERE user_id = ANY($1::uuid[]) ORDER BY created_at, source`,
        [userIds],
      );
    const ib: Array<Record<string, unknown>> = await ds.query(
      `SELECT id, session_id, user_id, client_message_id, content, attachments, delivery, is_synthetic, status,
              rewind_kind, rewind_message_id
         FROM session_inbox WHERE user_id = ANY($1::uuid[]) ORDER BY ord`,
      [userIds],
    );
    return {
      sessions: ss
        .map((s) => ({ ...s, id: labels.of(s.id), user_id: userIds.indexOf(s.user_id) }))
        .sort((a, b) => String(a.id).localeCompare(String(b.id))),
      inbox: ib.map((r) => ({
        ...r,
        id: labels.of(String(r.id)),
        session_id: labels.of(String(r.session_id)),
        user_id: userIds.indexOf(String(r.user_id)),
        rewind_message_id: labels.of(r.rewind_message_id as string | null),
      })),
    };
  }

  it('leaves the same rows and answers the same as the three statements', async () => {
    await fc.assert(
      fc.asyncProperty(
        userState,
        userState,
        fc.array(submission, { minLength: 1, maxLength: 6 }),
        async (mine, theirs, ops) => {
          const worlds = [0, 1].map(() => ({ user: randomUUID(), other: randomUUID(), labels: new Labels() }));
          for (const w of worlds) {
            await build(w.user, mine, w.labels, 'u');
            await build(w.other, theirs, w.labels, 'o');
          }
          const answers: Array<Array<{ session: string | null; message: string | null; duplicate: boolean }>> = [
            [],
            [],
          ];
          for (const op of ops) {
            for (const [i, w] of worlds.entries()) {
              const s: Submission = {
                actor: { userId: w.user, role: op.role },
                source: op.source,
                clientMessageId: op.client,
                content: op.content,
                attachments: op.attachments,
                delivery: op.delivery,
                isSynthetic: op.isSynthetic,
              };
              const r = i === 0 ? await threeStatements(s) : await service.submit(s);
              // The answered session is the caller's, and the message is committed when answered.
              const [owned] = await ds.query<Array<{ mine: boolean; stored: boolean }>>(
                `SELECT (SELECT user_id FROM sessions WHERE id = $1) = $2 AS mine,
                      EXISTS (SELECT 1 FROM session_inbox WHERE user_id = $2 AND client_message_id = $3) AS stored`,
                [r.session_id, w.user, toPgText(op.client)],
              );
              expect(owned).toEqual({ mine: true, stored: true });
              answers[i].push({
                session: w.labels.of(r.session_id),
                message: w.labels.of(r.message_id),
                duplicate: r.duplicate,
              });
            }
          }
          expect(answers[1]).toEqual(answers[0]);
          const [slow, fast] = await Promise.all(worlds.map((w) => rows([w.user, w.other], w.labels)));
          // Sessions no answer named (created by a submit answered as a duplicate) are labelled in creation order.
          expect(fast).toEqual(slow);
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('is one prepared statement when the session is active (parsed once per connection)', async () => {
    const userId = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [randomUUID(), userId]);
    // What node-postgres sends, as TypeORM loaded it: a statement with a name is parsed by Postgres
    // once per connection and then only bound and executed.
    type Proto = { query: (...a: unknown[]) => unknown };
    const proto = (ds.driver as unknown as { postgres: { Client: { prototype: Proto } } }).postgres.Client.prototype;
    const original = proto.query;
    const seen: Array<string | null> = [];
    proto.query = function (this: unknown, ...a: unknown[]) {
      const q = a[0] as string | { name?: string };
      seen.push(typeof q === 'object' && q !== null ? (q.name ?? null) : null);
      return original.apply(this, a);
    };
    const transaction = jest.spyOn(ds, 'transaction');
    try {
      const s: Submission = {
        actor: { userId, role: 'admin' },
        source: 'web',
        clientMessageId: 'one',
        content: 'hello',
        delivery: 'queue',
        isSynthetic: false,
      };
      const first = await service.submit(s);
      const again = await service.submit(s);
      expect(first.duplicate).toBe(false);
      expect(again).toEqual({ ...first, duplicate: true });
      expect(seen).toEqual([SUBMIT_NAME, SUBMIT_NAME]);
      expect(transaction).not.toHaveBeenCalled();
    } finally {
      proto.query = original;
      transaction.mockRestore();
    }
  });

  it('a submit killed mid-statement wrote nothing, was not acknowledged, and its retry stores the message once', async () => {
    const userId = randomUUID();
    const sessionId = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source, owner_role) VALUES ($1, $2, 'web', 'user')`, [
      sessionId,
      userId,
    ]);
    const s: Submission = {
      actor: { userId, role: 'admin' },
      source: 'web',
      clientMessageId: `kill-${randomUUID()}`,
      content: 'survives?',
      delivery: 'queue',
      isSynthetic: false,
    };
    // Another transaction holds the session row: the submit's statement waits inside, then dies.
    const holder = ds.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    const holderPid = await backendPid(holder);
    await holder.query(`SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, [sessionId]);
    const pending = service.submit(s).then(
      () => 'acknowledged',
      () => 'failed',
    );
    const pid = await statementWaitingOn(ds, holderPid, SUBMIT_HEAD);
    await ds.query(`SELECT pg_terminate_backend($1)`, [pid]);
    expect(await pending).toBe('failed');
    await holder.commitTransaction();
    await holder.release();
    expect(await ds.query(`SELECT owner_role FROM sessions WHERE id = $1`, [sessionId])).toEqual([
      { owner_role: 'user' },
    ]);
    expect(await ds.query(`SELECT id FROM session_inbox WHERE user_id = $1`, [userId])).toEqual([]);
    const retried = await service.submit(s);
    const again = await service.submit(s);
    expect(retried).toMatchObject({ session_id: sessionId, duplicate: false });
    expect(again).toEqual({ ...retried, duplicate: true });
    expect(await ds.query(`SELECT owner_role FROM sessions WHERE id = $1`, [sessionId])).toEqual([
      { owner_role: 'admin' },
    ]);
    expect(await ds.query(`SELECT id FROM session_inbox WHERE user_id = $1`, [userId])).toEqual([
      { id: retried.message_id },
    ]);
  });

  it('concurrent retries of one message store it once and all answer its id', async () => {
    for (let round = 0; round < 5; round++) {
      const userId = randomUUID();
      const sessionId = randomUUID();
      await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [sessionId, userId]);
      const s: Submission = {
        actor: { userId, role: 'user' },
        source: 'web',
        clientMessageId: 'same',
        content: 'once',
        delivery: 'steer',
        isSynthetic: false,
      };
      const answers = await Promise.all(Array.from({ length: 6 }, () => service.submit(s)));
      const stored = await ds.query<Array<{ id: string }>>(`SELECT id FROM session_inbox WHERE user_id = $1`, [userId]);
      expect(stored).toHaveLength(1);
      expect(answers.filter((a) => !a.duplicate)).toHaveLength(1);
      for (const a of answers) expect(a).toMatchObject({ session_id: sessionId, message_id: stored[0].id });
    }
  });
});

const TTL = 4_000;
/** The session's lease before the submits, as the table can hold it. */
const LEASE_STATES = ['none', 'free', 'expired', 'other', 'self', 'self-expired'] as const;
type LeaseState = (typeof LEASE_STATES)[number];
const leaseWorld = fc.record({
  lease: fc.constantFrom(...LEASE_STATES),
  epoch: fc.integer({ min: 0, max: 5 }),
  turn: fc.constantFrom('finished', 'running', 'parked'),
  /** This worker already drives (or is asking for) the session. */
  busy: fc.boolean(),
  draining: fc.boolean(),
  /** Client ids already stored in the session (a submit with one of them is a duplicate). */
  stored: fc.uniqueArray(fc.constantFrom(...CLIENT_IDS), { maxLength: 2 }),
  ops: fc.array(
    fc.record({
      // 'telegram' has no active session: the rare path, which keeps the old way.
      source: fc.constantFrom('web', 'web', 'web', 'telegram'),
      role: fc.constantFrom(...ROLES),
      client: fc.constantFrom(...CLIENT_IDS),
      delivery: fc.constantFrom<Delivery>('steer', 'queue', 'interrupt'),
    }),
    { minLength: 1, maxLength: 4 },
  ),
});
type LeaseWorld = typeof leaseWorld extends fc.Arbitrary<infer T> ? T : never;

/**
 * The lease taken by the submit's statement (`submitToActive` with this worker's `leaseAsk`)
 * against the two statements it replaces: the former submit statement, then — for a new message,
 * unless this worker is draining or already drives or asks for the session — the driver's
 * `LeaseRepository.acquire`. Over generated lease states (no row, released, expired, held by
 * another worker, held by this worker, expired in this worker's name), turn states (finished,
 * running, parked), duplicates, interrupts and the no-active-session path, both leave the same
 * rows (sessions, inbox, lease owner / epoch / TTL / liveness) and hand the same lease to the
 * driver; and every lease the old way got from `acquire` for an active session, the new way got from
 * the statement — no `acquire`, no doorbell. Then the crash and race properties.
 */
describe('SubmitService.submit: the submit takes the lease', () => {
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
    console.log(`submit lease: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  /** How the driver got a lease: from the submit's statement, or by asking (`acquire`). */
  type Taken = { how: 'statement' | 'acquire'; sessionId: string; owner: string; epoch: number; tookOver: boolean };

  /**
   * A worker: the real SubmitService over a driver that drives nothing but keeps the real driver's
   * lease rules — `leaseAsk` (null while draining, its busy sessions), `drive` (no ask while
   * draining, busy or asking; else `acquire`), `driveWith` (the lease handed over).
   */
  function worker(owner: string, opts: { draining?: boolean; busy?: string[]; ttlMs?: number } = {}) {
    const ttlMs = opts.ttlMs ?? TTL;
    const busy = new Set(opts.busy ?? []);
    const taken: Taken[] = [];
    const doorbells: string[] = [];
    const pending: Array<Promise<unknown>> = [];
    let acquires = 0;
    const driver = {
      leaseAsk: () => (opts.draining ? null : { owner, ttlMs, busy: [...busy] }),
      looksAgain: (sessionId: string) => !opts.draining && busy.has(sessionId),
      driveWith: (lease: Lease) => {
        taken.push({ how: 'statement', ...lease, tookOver: lease.tookOver === true });
        busy.add(lease.sessionId);
        return Promise.resolve();
      },
      drive: (sessionId: string) => {
        if (opts.draining || busy.has(sessionId)) return Promise.resolve();
        busy.add(sessionId);
        acquires++;
        const p = leases.acquire(sessionId, owner, ttlMs).then((l) => {
          if (l) taken.push({ how: 'acquire', ...l, tookOver: l.tookOver === true });
          else busy.delete(sessionId);
        });
        pending.push(p);
        return p;
      },
    };
    const bus = {
      publish: ({ subject }: { subject: string }, p: { session_id: string }) => {
        if (subject === topicOf('sessionWake', p.session_id).subject) doorbells.push(p.session_id);
      },
    };
    const service = new SubmitService(sessions, inbox, driver as never, bus as never, turnState, {} as never, leases);
    return {
      service,
      taken,
      doorbells,
      acquires: () => acquires,
      /** Lets the submit's setImmediate run, then waits for the asks it started. */
      settle: async () => {
        await new Promise((r) => setImmediate(r));
        await Promise.all(pending);
      },
    };
  }

  async function buildLeaseWorld(userId: string, w: LeaseWorld): Promise<string> {
    const sessionId = randomUUID();
    await ds.query(
      `INSERT INTO sessions (id, user_id, source, owner_role, turn_state) VALUES ($1, $2, 'web', 'user', $3)`,
      [sessionId, userId, w.turn],
    );
    const rows: Record<Exclude<LeaseState, 'none'>, { owner: string | null; expired: boolean }> = {
      free: { owner: null, expired: true },
      expired: { owner: 'w2', expired: true },
      other: { owner: 'w2', expired: false },
      self: { owner: 'w1', expired: false },
      'self-expired': { owner: 'w1', expired: true },
    };
    if (w.lease !== 'none') {
      const r = rows[w.lease];
      await ds.query(
        `INSERT INTO session_leases (session_id, owner, epoch, acquired_at, expires_at)
         VALUES ($1, $2, $3, now() - interval '2 minutes',
                 now() - interval '2 minutes' + CASE WHEN $4 THEN interval '1 minute' ELSE interval '10 minutes' END)`,
        [sessionId, r.owner, w.epoch, r.expired],
      );
    }
    for (const client of w.stored)
      await ds.query(
        `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery)
         VALUES ($1, $2, $3, $4, 'before', 'queue')`,
        [randomUUID(), sessionId, userId, toPgText(client)],
      );
    return sessionId;
  }

  async function leaseRows(userId: string, sessionIds: Map<string, string>) {
    const label = (id: string) => sessionIds.get(id) ?? 'created';
    const ss: Array<Record<string, unknown>> = await ds.query(
      `SELECT s.id, s.source, s.owner_role, s.turn_state, s.stop_requested_at IS NOT NULL AS stop,
              l.owner, l.epoch, l.expires_at > now() AS live,
              round(extract(epoch FROM l.expires_at - l.acquired_at) * 1000) AS ttl_ms
         FROM sessions s LEFT JOIN session_leases l ON l.session_id = s.id
        WHERE s.user_id = $1 ORDER BY s.source`,
      [userId],
    );
    const ib: Array<Record<string, unknown>> = await ds.query(
      `SELECT session_id, client_message_id, content, delivery, status FROM session_inbox WHERE user_id = $1 ORDER BY ord`,
      [userId],
    );
    return {
      sessions: ss.map((r) => ({ ...r, id: label(String(r.id)) })),
      inbox: ib.map((r) => ({ ...r, session_id: label(String(r.session_id)) })),
    };
  }

  it('leaves the same rows and hands the driver the same lease as the submit statement + acquire', async () => {
    await fc.assert(
      fc.asyncProperty(leaseWorld, async (w) => {
        const users = [randomUUID(), randomUUID()];
        const ids = await Promise.all(users.map((u) => buildLeaseWorld(u, w)));
        const labels = ids.map((id) => new Map([[id, 'web']]));
        const busyOf = (i: number) => (w.busy ? [ids[i]] : []);

        // The old way, statement for statement.
        const oldBusy = new Set(busyOf(0));
        const oldAnswers: unknown[] = [];
        for (const op of w.ops) {
          const item = { clientMessageId: op.client, content: 'hi', delivery: op.delivery, isSynthetic: false };
          let stored = await inbox.submitToActive({ userId: users[0], source: op.source, role: op.role }, item);
          if (!stored) {
            const { id } = await sessions.active({ userId: users[0], source: op.source });
            await turnState.recordOwnerRole(id, op.role);
            stored = { ...(await inbox.store({ userId: users[0], sessionId: id, ...item })), lease: null };
          }
          let lease: Lease | null = null;
          if (!stored.duplicate) {
            if (op.delivery === 'interrupt') await turnState.requestStop(stored.sessionId);
            if (!w.draining && !oldBusy.has(stored.sessionId)) {
              lease = await leases.acquire(stored.sessionId, 'w1', TTL);
              if (lease) oldBusy.add(stored.sessionId);
            }
          }
          oldAnswers.push({
            session: stored.sessionId === ids[0] ? 'web' : 'created',
            duplicate: stored.duplicate,
            lease: lease && { epoch: lease.epoch, tookOver: lease.tookOver === true },
          });
        }

        // The new way: the real SubmitService.
        const me = worker('w1', { draining: w.draining, busy: busyOf(1) });
        const newAnswers: unknown[] = [];
        for (const op of w.ops) {
          const before = { taken: me.taken.length, acquires: me.acquires(), doorbells: me.doorbells.length };
          const r = await me.service.submit({
            actor: { userId: users[1], role: op.role },
            source: op.source,
            clientMessageId: op.client,
            content: 'hi',
            delivery: op.delivery,
            isSynthetic: false,
          });
          await me.settle();
          const got = me.taken.slice(before.taken);
          expect(got.length).toBeLessThanOrEqual(1);
          newAnswers.push({
            session: r.session_id === ids[1] ? 'web' : 'created',
            duplicate: r.duplicate,
            lease: got[0] ? { epoch: got[0].epoch, tookOver: got[0].tookOver } : null,
          });
          // A lease for the active session comes with the message: no ask, no doorbell.
          if (got[0] && r.session_id === ids[1]) {
            expect(got[0]).toMatchObject({ how: 'statement', owner: 'w1', sessionId: ids[1] });
            expect(me.acquires()).toBe(before.acquires);
            expect(me.doorbells.length).toBe(before.doorbells);
          }
          // A duplicate takes nothing and rings nothing.
          if (r.duplicate) {
            expect(got).toEqual([]);
            expect(me.doorbells.length).toBe(before.doorbells);
          }
        }
        expect(newAnswers).toEqual(oldAnswers);
        const [oldRows, newRows] = await Promise.all(users.map((u, i) => leaseRows(u, labels[i])));
        expect(newRows).toEqual(oldRows);
      }),
      { seed: SEED, numRuns: RUNS * 2 },
    );
  });

  it('a submit killed mid-statement took no lease and stored nothing; its retry takes the lease once', async () => {
    const userId = randomUUID();
    const sessionId = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source, owner_role) VALUES ($1, $2, 'web', 'user')`, [
      sessionId,
      userId,
    ]);
    await ds.query(
      `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, NULL, 3, now() - interval '1 second')`,
      [sessionId],
    );
    const me = worker('w1');
    const s: Submission = {
      actor: { userId, role: 'admin' },
      source: 'web',
      clientMessageId: `kill-lease-${randomUUID()}`,
      content: 'survives?',
      delivery: 'interrupt',
      isSynthetic: false,
    };
    // Another transaction holds the lease row: the statement's take waits inside, then dies.
    const holder = ds.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    const holderPid = await backendPid(holder);
    await holder.query(`SELECT 1 FROM session_leases WHERE session_id = $1 FOR UPDATE`, [sessionId]);
    const pending = me.service.submit(s).then(
      () => 'acknowledged',
      () => 'failed',
    );
    const pid = await statementWaitingOn(ds, holderPid, SUBMIT_HEAD);
    await ds.query(`SELECT pg_terminate_backend($1)`, [pid]);
    expect(await pending).toBe('failed');
    await holder.commitTransaction();
    await holder.release();
    await me.settle();
    const lease = () => ds.query(`SELECT owner, epoch::int FROM session_leases WHERE session_id = $1`, [sessionId]);
    expect(await lease()).toEqual([{ owner: null, epoch: 3 }]);
    expect(await ds.query(`SELECT owner_role FROM sessions WHERE id = $1`, [sessionId])).toEqual([
      { owner_role: 'user' },
    ]);
    expect(await ds.query(`SELECT id FROM session_inbox WHERE user_id = $1`, [userId])).toEqual([]);
    expect(me.taken).toEqual([]);
    const retried = await me.service.submit(s);
    const again = await me.service.submit(s);
    await me.settle();
    // the retry took the lease (its reply names this worker to the gateway), the duplicate did not
    expect(retried.leased).toBe(true);
    expect(again).toEqual({ ...retried, duplicate: true, leased: false });
    expect(me.taken).toEqual([{ how: 'statement', sessionId, owner: 'w1', epoch: 4, tookOver: false }]);
    expect(await lease()).toEqual([{ owner: 'w1', epoch: 4 }]);
    expect(await ds.query(`SELECT id FROM session_inbox WHERE user_id = $1`, [userId])).toEqual([
      { id: retried.message_id },
    ]);
  });

  it('an interrupt whose stop fails lets the lease go at once and is not acknowledged', async () => {
    const userId = randomUUID();
    const sessionId = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source, turn_state) VALUES ($1, $2, 'web', 'parked')`, [
      sessionId,
      userId,
    ]);
    const me = worker('w1');
    const stop = jest.spyOn(TurnStateRepository.prototype, 'requestStop').mockRejectedValueOnce(new Error('db down'));
    try {
      await expect(
        me.service.submit({
          actor: { userId, role: 'user' },
          source: 'web',
          clientMessageId: 'interrupt',
          content: 'now',
          delivery: 'interrupt',
          isSynthetic: false,
        }),
      ).rejects.toThrow('db down');
    } finally {
      stop.mockRestore();
    }
    await me.settle();
    expect(me.taken).toEqual([]);
    // Taken with the message (epoch 1), released: the sweep or the client's retry drives it.
    expect(await ds.query(`SELECT owner, epoch::int FROM session_leases WHERE session_id = $1`, [sessionId])).toEqual([
      { owner: null, epoch: 1 },
    ]);
  });

  it('concurrent submits to one session, from one worker and from two, end with one driver and every message stored once', async () => {
    for (let round = 0; round < 8; round++) {
      const userId = randomUUID();
      const sessionId = randomUUID();
      await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [sessionId, userId]);
      if (round % 2 === 1)
        await ds.query(
          `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, 'gone', 2, now() - interval '1 second')`,
          [sessionId],
        );
      // A TTL no loaded run outlasts: a lease expiring mid-round would rightly be taken again.
      const ttlMs = 60_000;
      const workers = round < 4 ? [worker('w1', { ttlMs })] : [worker('w1', { ttlMs }), worker('w2', { ttlMs })];
      // Six distinct messages and two retries of the first, spread over the workers.
      const clients = ['a', 'b', 'c', 'd', 'e', 'f', 'a', 'a'];
      const answers = await Promise.all(
        clients.map((c, i) =>
          workers[i % workers.length].service.submit({
            actor: { userId, role: 'user' },
            source: 'web',
            clientMessageId: c,
            content: `m-${c}`,
            delivery: i % 3 === 0 ? 'steer' : 'queue',
            isSynthetic: false,
          }),
        ),
      );
      await Promise.all(workers.map((w) => w.settle()));
      const taken = workers.flatMap((w) => w.taken);
      const [row] = await ds.query<Array<{ owner: string; epoch: number }>>(
        `SELECT owner, epoch::int FROM session_leases WHERE session_id = $1`,
        [sessionId],
      );
      expect(taken).toHaveLength(1);
      expect(row).toEqual({ owner: taken[0].owner, epoch: taken[0].epoch });
      expect(taken[0].epoch).toBe(round % 2 === 1 ? 3 : 1);
      const stored: Array<{ client_message_id: string; id: string }> = await ds.query(
        `SELECT client_message_id, id FROM session_inbox WHERE user_id = $1 ORDER BY client_message_id`,
        [userId],
      );
      expect(stored.map((r) => r.client_message_id)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
      expect(answers.filter((a) => !a.duplicate)).toHaveLength(6);
      for (const [i, a] of answers.entries())
        expect(a.message_id).toBe(stored.find((r) => r.client_message_id === clients[i])!.id);
    }
  });
});
