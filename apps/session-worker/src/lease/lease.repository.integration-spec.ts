import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { queryRows } from '@skald/persistence/query-rows';
import fc from 'fast-check';
import { InboxRepository } from '../submit/inbox.repository';
import { backendPid, waitingOn } from '../testing-fixtures/lock-waits';
import { LeaseRepository, RELEASE_AND_CHECK_NAME, RELEASE_AND_CHECK_SQL } from './lease.repository';

jest.setTimeout(30_000);

/**
 * The lease on real Postgres (judged by the database clock): one holder at a time, the epoch grows
 * with every acquisition, an expired lease can be taken over, and a stale holder can neither renew
 * nor release what another holds.
 */
describe('LeaseRepository', () => {
  let ds: DataSource;
  let leases: LeaseRepository;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 12 } });
    await ds.initialize();
    leases = new LeaseRepository(ds);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  async function session(): Promise<string> {
    const id = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [id, randomUUID()]);
    return id;
  }

  /** The lease runs out: set in its row, not waited for (a loaded machine must not decide when). */
  const expire = (sessionId: string) =>
    ds.query(`UPDATE session_leases SET expires_at = now() - interval '1 second' WHERE session_id = $1`, [sessionId]);

  const row = async (sessionId: string) =>
    (
      await queryRows<{ owner: string | null; epoch: number }>(
        ds,
        `SELECT owner, epoch::int AS epoch FROM session_leases WHERE session_id = $1`,
        [sessionId],
      )
    )[0];

  it('a free session is taken at epoch 1; a held one is refused to anyone else', async () => {
    const id = await session();
    expect(await leases.acquire(id, 'a', 10_000)).toEqual({ sessionId: id, owner: 'a', epoch: 1, tookOver: false });
    expect(await leases.acquire(id, 'b', 10_000)).toBeNull();
    expect(await leases.acquire(id, 'a', 10_000)).toBeNull();
    expect(await row(id)).toEqual({ owner: 'a', epoch: 1 });
  });

  it('released and taken again: the epoch grows and it is no takeover', async () => {
    const id = await session();
    const first = (await leases.acquire(id, 'a', 10_000))!;
    await leases.release(first);
    expect(await row(id)).toEqual({ owner: null, epoch: 1 });
    expect(await leases.acquire(id, 'b', 10_000)).toMatchObject({ owner: 'b', epoch: 2, tookOver: false });
  });

  it('an expired lease is taken over at the next epoch; the stale holder can neither renew nor release it', async () => {
    const id = await session();
    const stale = (await leases.acquire(id, 'a', 10_000))!;
    expect(await leases.renew(stale, 10_000)).toBe(true);
    await expire(id);
    const next = await leases.acquire(id, 'b', 10_000);
    expect(next).toMatchObject({ owner: 'b', epoch: 2, tookOver: true });
    expect(await leases.renew(stale, 10_000)).toBe(false);
    await leases.release(stale);
    expect(await row(id)).toEqual({ owner: 'b', epoch: 2 });
    expect(await leases.renew(next!, 10_000)).toBe(true);
  });

  it('a lease that expired cannot be renewed even by its holder (someone may be taking it over)', async () => {
    const id = await session();
    const lease = (await leases.acquire(id, 'a', 10_000))!;
    await expire(id);
    expect(await leases.renew(lease, 10_000)).toBe(false);
  });

  it('ten workers racing for one session: exactly one wins, and epochs only grow over many rounds', async () => {
    const id = await session();
    let lastEpoch = 0;
    for (let round = 0; round < 5; round++) {
      const got = await Promise.all(Array.from({ length: 10 }, (_, i) => leases.acquire(id, `w${i}`, 10_000)));
      const winners = got.filter((l) => l !== null);
      expect(winners).toHaveLength(1);
      expect(winners[0].epoch).toBeGreaterThan(lastEpoch);
      lastEpoch = winners[0].epoch;
      await leases.release(winners[0]);
    }
    expect(lastEpoch).toBe(5);
  });

  it('releaseAndCheckWork releases the lease and says whether input waits (a finished turn with queued input)', async () => {
    const id = await session();
    const lease = (await leases.acquire(id, 'a', 10_000))!;
    expect(await leases.releaseAndCheckWork(lease)).toBe(false);
    expect((await row(id)).owner).toBeNull();
    const again = (await leases.acquire(id, 'a', 10_000))!;
    await ds.query(
      `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery, is_synthetic)
       SELECT $1, id, user_id, 'c1', 'hi', 'queue', false FROM sessions WHERE id = $2`,
      [randomUUID(), id],
    );
    expect(await leases.releaseAndCheckWork(again)).toBe(true);
    expect((await row(id)).owner).toBeNull();
    // A stale holder releases nothing (the fence), but still learns about the work.
    const third = (await leases.acquire(id, 'b', 10_000))!;
    expect(await leases.releaseAndCheckWork({ ...third, owner: 'a' })).toBe(true);
    expect((await row(id)).owner).toBe('b');
  });

  it("releaseAndCheckWork can miss a message submitted as it runs, whose statement saw the lease still held: only that message's doorbell is left (TurnDriver remembers it)", async () => {
    const id = await session();
    const [{ user_id: userId }] = await ds.query<Array<{ user_id: string }>>(
      `SELECT user_id FROM sessions WHERE id = $1`,
      [id],
    );
    const lease = (await leases.acquire(id, 'a', 10_000))!;
    // The release statement takes its snapshot, then waits on the lease row (held here a moment).
    const blocker = ds.createQueryRunner();
    await blocker.connect();
    await blocker.startTransaction();
    const pid = await backendPid(blocker);
    await blocker.query(`SELECT 1 FROM session_leases WHERE session_id = $1 FOR UPDATE`, [id]);
    const released = leases.releaseAndCheckWork(lease);
    await waitingOn(ds, pid, 1);
    // Meanwhile a message is submitted from another worker: the lease is held in its snapshot, so
    // the statement stores the message and takes no lease.
    const stored = await new InboxRepository(ds).submitToActive(
      { userId, source: 'web', role: 'user' },
      { clientMessageId: 'late', content: 'hello', delivery: 'queue', isSynthetic: false },
      { owner: 'b', ttlMs: 10_000, busy: [] },
    );
    expect(stored).toMatchObject({ sessionId: id, duplicate: false, lease: null });
    await blocker.commitTransaction();
    await blocker.release();
    // The release's check read before the message was committed: no work, the lease free, the
    // message queued — nobody drives it unless its doorbell does.
    expect(await released).toBe(false);
    expect((await row(id)).owner).toBeNull();
    expect(await ds.query(`SELECT content, status FROM session_inbox WHERE session_id = $1`, [id])).toEqual([
      { content: 'hello', status: 'queued' },
    ]);
  });

  it('releaseAndCheckWork, sent by name on a generic plan, answers and writes what the statement sent as text does', async () => {
    // The former call: the same text, unnamed (parsed and planned per call). The new one: by name,
    // on a connection that always uses the generic plan (what a pooled connection settles on).
    const generic = new DataSource({
      type: 'postgres',
      url: process.env.DATABASE_URL,
      extra: { max: 1, options: '-c plan_cache_mode=force_generic_plan' },
    });
    await generic.initialize();
    const named = new LeaseRepository(generic);
    const seed = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
    const state = fc.record({
      turn: fc.constantFrom('running', 'parked', 'finished'),
      stop: fc.boolean(),
      inbox: fc.array(fc.constantFrom('queued', 'entered', 'discarded'), { maxLength: 3 }),
      holder: fc.constantFrom('me', 'other', 'stale epoch', 'expired', 'none'),
    });
    type State = typeof state extends fc.Arbitrary<infer T> ? T : never;
    /** A session in `s`, and the lease its caller believes it holds. */
    const make = async (s: State) => {
      const id = await session();
      await ds.query(
        `UPDATE sessions SET turn_state = $2, stop_requested_at = CASE WHEN $3 THEN now() END WHERE id = $1`,
        [id, s.turn, s.stop],
      );
      for (const [i, status] of s.inbox.entries())
        await ds.query(
          `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery, is_synthetic, status)
           SELECT $1, id, user_id, $3, 'hi', 'queue', false, $4 FROM sessions WHERE id = $2`,
          [randomUUID(), id, `c${i}-${randomUUID()}`, status],
        );
      const lease = (await leases.acquire(id, s.holder === 'other' ? 'b' : 'a', 10_000))!;
      if (s.holder === 'expired') await expire(id);
      if (s.holder === 'none') await leases.release(lease);
      const mine = { ...lease, owner: 'a', epoch: s.holder === 'stale epoch' ? lease.epoch - 1 : lease.epoch };
      return { id, mine };
    };
    const after = async (id: string) =>
      (
        await queryRows<{ owner: string | null; epoch: number; live: boolean }>(
          ds,
          `SELECT owner, epoch::int AS epoch, expires_at > now() AS live FROM session_leases WHERE session_id = $1`,
          [id],
        )
      )[0];
    const sent: Array<string | null> = [];
    const client = (
      generic.driver as unknown as { postgres: { Client: { prototype: { query: (...a: unknown[]) => unknown } } } }
    ).postgres.Client.prototype;
    const original = client.query;
    client.query = function (this: unknown, ...a: unknown[]) {
      const q = a[0] as string | { name?: string };
      sent.push(typeof q === 'object' && q !== null ? (q.name ?? null) : null);
      return original.apply(this, a);
    };
    try {
      await fc.assert(
        fc.asyncProperty(state, async (s) => {
          const old = await make(s);
          const now = await make(s);
          const [oldRow] = await queryRows<{ work: boolean }>(ds, RELEASE_AND_CHECK_SQL, [
            old.id,
            old.mine.owner,
            old.mine.epoch,
          ]);
          sent.length = 0;
          const work = await named.releaseAndCheckWork(now.mine);
          expect(sent).toEqual([RELEASE_AND_CHECK_NAME]);
          expect(work).toBe(oldRow.work === true);
          expect(await after(now.id)).toEqual(await after(old.id));
        }),
        { seed, numRuns: Number(process.env.FC_RUNS ?? 60) },
      );
    } finally {
      client.query = original;
      await generic.destroy();
    }
  });
});
