import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import type { Delivery } from '@skald/contracts';
import { toPgText } from '@skald/persistence';
import { SessionsRepository } from '../sessions/sessions.repository';
import { TurnStateRepository } from '../sessions/turn-state.repository';
import { InboxRepository } from './inbox.repository';
import { Submission, SubmitService } from './submit.service';

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
    const driver = { drive: async () => undefined };
    const bus = { publish: (_s: string, _m: string, p: { session_id: string }) => woken.push(p.session_id) };
    service = new SubmitService(sessions, inbox, driver as never, bus as never, turnState, {} as never);
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
              const [owned] = await ds.query(
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

  it('is one statement when the session is active', async () => {
    const userId = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [randomUUID(), userId]);
    const seen: string[] = [];
    const query = ds.query.bind(ds);
    const spy = jest.spyOn(ds, 'query').mockImplementation(((q: string, p?: unknown[]) => {
      seen.push(q);
      return query(q, p);
    }) as typeof ds.query);
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
      expect(seen).toHaveLength(2);
      expect(transaction).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
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
    await holder.query(`SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, [sessionId]);
    const pending = service.submit(s).then(
      () => 'acknowledged',
      () => 'failed',
    );
    let pid: number | null = null;
    for (let i = 0; i < 100 && pid === null; i++) {
      const [row] = await ds.query(
        `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO session_inbox%' AND query LIKE '%WITH s AS%'`,
      );
      if (row) pid = row.pid;
      else await new Promise((r) => setTimeout(r, 50));
    }
    expect(pid).not.toBeNull();
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
      const stored = await ds.query(`SELECT id FROM session_inbox WHERE user_id = $1`, [userId]);
      expect(stored).toHaveLength(1);
      expect(answers.filter((a) => !a.duplicate)).toHaveLength(1);
      for (const a of answers) expect(a).toMatchObject({ session_id: sessionId, message_id: stored[0].id });
    }
  });
});
