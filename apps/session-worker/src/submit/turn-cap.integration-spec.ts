import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { recordAttackSuite } from '@skald/testing';
import { SessionsRepository } from '../sessions/sessions.repository';
import { LeaseRepository, type Lease } from '../lease/lease.repository';
import { TurnSlots } from '../turns/turn-slots';
import { SessionsService } from '../sessions/sessions.service';
import { TurnStateRepository } from '../sessions/turn-state.repository';
import { InboxRepository } from './inbox.repository';

jest.setTimeout(120_000);

/**
 * Per-user cap on running turns (`SKALD_MAX_CONCURRENT_TURNS_PER_USER`): the submit's statement
 * starts a turn only with a slot, else stores the message queued (accepted, never refused); the
 * driver reserves a slot before a turn from the inbox (TurnSlots); a turn that ends or parks frees
 * its slot in the same statement (trigger on sessions.turn_state); a slot reserved by a driver
 * that died is reused by the next driver of that session, not taken twice.
 */
describe('turns: per-user cap on running turns', () => {
  let ds: DataSource;
  let sessions: SessionsRepository;
  let leases: LeaseRepository;
  let slots: TurnSlots;
  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 10 } });
    await ds.initialize();
    sessions = new SessionsRepository(ds);
    leases = new LeaseRepository(ds);
    slots = new TurnSlots(ds);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  const running = async (userId: string) =>
    Number(
      (
        await ds.query<Array<{ n: string }>>(
          `SELECT count(*) AS n FROM sessions WHERE user_id = $1 AND turn_state = 'running'`,
          [userId],
        )
      )[0].n,
    );
  const counter = async (userId: string) =>
    Number(
      (
        await ds.query<Array<{ running: number }>>(`SELECT running FROM user_turns_running WHERE user_id = $1`, [
          userId,
        ])
      )[0]?.running ?? 0,
    );
  const held = async (userId: string) =>
    Number(
      (
        await ds.query<Array<{ n: string }>>(
          `SELECT count(*) AS n FROM sessions WHERE user_id = $1 AND holds_turn_slot`,
          [userId],
        )
      )[0].n,
    );
  const msg = (clientMessageId: string) => ({
    clientMessageId,
    content: `m ${clientMessageId}`,
    delivery: 'queue' as const,
    isSynthetic: false,
  });
  const take = () => ({
    owner: 'worker-a',
    ttlMs: 30_000,
    busy: [],
    enter: { frameId: randomUUID(), at: new Date() },
  });

  it('cap 2: five concurrent submits to five sessions start 2 turns, store 3 queued (all accepted, once); another user is unaffected', async () => {
    const inbox = new InboxRepository(ds, { concurrentTurns: 2 });
    const userId = randomUUID();
    const sources = ['s0', 's1', 's2', 's3', 's4'];
    for (const source of sources) await sessions.active({ userId, source });
    const other = randomUUID();
    for (const source of ['s0', 's1']) await sessions.active({ userId: other, source });

    const rs = await Promise.all([
      ...sources.map((source, i) => inbox.submitToActive({ userId, source, role: 'user' }, msg(`u${i}`), take())),
      ...['s0', 's1'].map((source, i) =>
        inbox.submitToActive({ userId: other, source, role: 'user' }, msg(`o${i}`), take()),
      ),
    ]);
    // Every message accepted, none twice.
    expect(rs.every((r) => r !== null && !r.duplicate)).toBe(true);
    const rows = await ds.query<Array<{ client_message_id: string; status: string }>>(
      `SELECT client_message_id, status FROM session_inbox WHERE user_id = $1 ORDER BY client_message_id`,
      [userId],
    );
    expect(rows.map((r) => r.client_message_id)).toEqual(['u0', 'u1', 'u2', 'u3', 'u4']);
    expect(rows.filter((r) => r.status === 'entered')).toHaveLength(2);
    expect(rows.filter((r) => r.status === 'queued')).toHaveLength(3);
    expect(await running(userId)).toBe(2);
    expect(await counter(userId)).toBe(2);
    // The other user: both started.
    expect(await running(other)).toBe(2);
    expect(await counter(other)).toBe(2);
    recordAttackSuite('fairness', 'concurrent turns cap', {
      submits: 5,
      started: await running(userId),
      queued: rows.filter((r) => r.status === 'queued').length,
      cap: 2,
    });

    // The held-back sessions' drivers (leases taken by the submits): reservations exact under concurrency.
    const waiting = rs.slice(0, 5).filter((r) => r && !r.start?.entered) as Array<{ lease: Lease | null }>;
    expect(waiting).toHaveLength(3);
    const waitLeases = waiting.map((w) => w.lease as Lease);
    expect(await Promise.all(waitLeases.map((l) => slots.reserve(l, 2)))).toEqual(['at_cap', 'at_cap', 'at_cap']);

    // One turn ends (finished, in one statement): its slot is free; of three concurrent reserves one wins.
    const [first] = await ds.query<Array<{ id: string }>>(
      `SELECT id FROM sessions WHERE user_id = $1 AND turn_state = 'running' ORDER BY id LIMIT 1`,
      [userId],
    );
    await ds.query(`UPDATE sessions SET turn_state = 'finished' WHERE id = $1`, [first.id]);
    expect(await counter(userId)).toBe(1);
    // Held-back sessions still leased by their drivers are not offered to a doorbell.
    expect(await slots.waiting(userId, first.id)).toBeNull();
    const won = await Promise.all(waitLeases.map((l) => slots.reserve(l, 2)));
    expect(won.filter((r) => r === 'reserved')).toHaveLength(1);
    expect(won.filter((r) => r === 'at_cap')).toHaveLength(2);
    expect(await counter(userId)).toBe(2);
    expect(await held(userId)).toBe(2);
    // Its turn starts (the driver's commit): still one slot, not two.
    const winner = waitLeases[won.indexOf('reserved')];
    await ds.query(`UPDATE sessions SET turn_state = 'running' WHERE id = $1`, [winner.sessionId]);
    expect(await counter(userId)).toBe(2);
    // A turn that parks (waiting for a human) holds nothing.
    await ds.query(`UPDATE sessions SET turn_state = 'parked' WHERE id = $1`, [winner.sessionId]);
    expect(await counter(userId)).toBe(1);
    // A resumed parked turn is never held back: counted (here back at the cap).
    await ds.query(`UPDATE sessions SET turn_state = 'running' WHERE id = $1`, [winner.sessionId]);
    expect(await counter(userId)).toBe(2);
    expect(await counter(userId)).toBe(await held(userId));
    // The losers' drivers let go (nothing reserved) and release: their sessions are offered to the next freed slot's doorbell.
    const losers = waitLeases.filter((l) => l !== winner);
    for (const l of losers) {
      expect(await slots.letGo(l)).toBe(false);
      await leases.release(l);
    }
    expect(losers.map((l) => l.sessionId)).toContain(await slots.waiting(userId, winner.sessionId));
  });

  it('a slot reserved by a driver that died (lease expired) is reused by the next driver, never counted twice; let go when unused; delete frees it', async () => {
    const userId = randomUUID();
    const { id: a } = await sessions.active({ userId, source: 'a' });
    const { id: b } = await sessions.active({ userId, source: 'b' });
    const dead = await leases.acquire(a, 'worker-dead', 1);
    expect(dead).not.toBeNull();
    expect(await slots.reserve(dead!, 1)).toBe('reserved');
    expect(await counter(userId)).toBe(1);
    await new Promise((r) => setTimeout(r, 20));
    // The stale driver can no longer let go or reserve: fenced by its lease's epoch.
    const next = await leases.acquire(a, 'worker-b', 30_000);
    expect(next).not.toBeNull();
    expect(await slots.letGo(dead!)).toBe(false);
    // A stale driver is not told it is at the cap: the lease is not its own.
    expect(await slots.reserve(dead!, 1)).toBe('not_ours');
    // The next driver: the session already holds its slot (cap 1 is full with it).
    expect(await slots.reserve(next!, 1)).toBe('reserved');
    expect(await counter(userId)).toBe(1);
    // Another session of the user is held back at cap 1.
    const lb = await leases.acquire(b, 'worker-b', 30_000);
    expect(await slots.reserve(lb!, 1)).toBe('at_cap');
    // The next driver ends without starting the turn: the slot goes back; now b gets it.
    expect(await slots.letGo(next!)).toBe(true);
    expect(await counter(userId)).toBe(0);
    expect(await slots.reserve(lb!, 1)).toBe('reserved');
    // Deleting the conversation frees its slot.
    await ds.query(`DELETE FROM sessions WHERE id = $1`, [b]);
    expect(await counter(userId)).toBe(0);
  });

  it('turn_running after a (re)connect: a session whose queued input waits at the cap says waiting turn_slot with the cap; under the cap, or once started, it does not', async () => {
    const inbox = new InboxRepository(ds, { concurrentTurns: 1 });
    const service = new SessionsService(
      new SessionsRepository(ds, { concurrentTurns: 1 }),
      new TurnStateRepository(ds),
      null as never,
    );
    const userId = randomUUID();
    const actor = { userId, role: 'user' as const };
    const { id: a } = await sessions.active({ userId, source: 'a' });
    const { id: b } = await sessions.active({ userId, source: 'b' });
    // Nothing queued: not waiting.
    expect(await service.replay(actor, b, undefined)).toMatchObject({ running: false });
    expect((await service.replay(actor, b, undefined)).waiting).toBeUndefined();
    const ra = await inbox.submitToActive({ userId, source: 'a', role: 'user' }, msg('a1'), take());
    expect(ra?.start?.entered).toBeTruthy();
    const rb = await inbox.submitToActive({ userId, source: 'b', role: 'user' }, msg('b1'), take());
    expect(rb?.start?.entered).toBeFalsy();
    expect(await service.replay(actor, b, undefined)).toMatchObject({ running: false, waiting: 'turn_slot', limit: 1 });
    // The running session is not waiting for a slot.
    const runningA = await service.replay(actor, a, undefined);
    expect(runningA).toMatchObject({ running: true });
    expect(runningA.waiting).toBeUndefined();
    // Another user's session is not found, as ever.
    await expect(service.replay({ userId: randomUUID(), role: 'user' }, b, undefined)).rejects.toThrow(
      'session not found',
    );
    // a's turn ends: the slot is free, b is no longer held back (its driver takes it next).
    await ds.query(`UPDATE sessions SET turn_state = 'finished' WHERE id = $1`, [a]);
    expect((await service.replay(actor, b, undefined)).waiting).toBeUndefined();
  });
});
