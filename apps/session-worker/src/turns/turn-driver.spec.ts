import { expect } from '@jest/globals';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { DataSource } from 'typeorm';
import { TURN_START_NAME } from '../loop-adapters/session-store/turn-start';
import type { Bus } from '@skald/messaging/bus-port';
import type { LlmManager } from '@skald/llm';
import { WorkerConfigSchema } from '../config';
import type { Lease, LeaseRepository } from '../lease/lease.repository';
import type { LlmService } from '../llm/llm.service';
import type { AgentCatalogService } from '../agents/agent-catalog.service';
import type { TurnStateRepository } from '../sessions/turn-state.repository';
import type { EventAnnouncer } from './event-announcer';
import { TurnDriver } from './turn-driver';
import { TurnMetrics } from './turn-metrics';

/**
 * The driver's lease rules with fakes for everything it talks to: one driver per session, the
 * lease released after driving, takeovers counted only when taken from a live owner's expired
 * lease, and a SIGTERM hand-over that fences the turn before it is told to stop.
 */

const SESSION = '00000000-0000-4000-8000-000000000001';

/** A session with a finished turn and an empty inbox: driving it ends at once. */
function idleDataSource(): DataSource {
  const session = {
    id: SESSION,
    user_id: 'u1',
    agent_id: 'main',
    source: 'web',
    turn_state: 'finished',
    turn_id: null,
  };
  const query = (sql: string): Promise<unknown[]> =>
    Promise.resolve(/FROM sessions s\s+LEFT JOIN llm_client_pins/.test(sql) ? [session] : []);
  // The turn's start read (one prepared statement on the pool): the session, nothing queued, no work.
  const master = {
    query: (config: { name: string }): Promise<{ rows: unknown[] }> => {
      startReads.push(config.name);
      return Promise.resolve({
        rows: [{ session: JSON.stringify(session), complete: false, inbox: '[]', frames: '[]' }],
      });
    },
  };
  return { query, driver: { master } } as unknown as DataSource;
}

/** The names of the start reads the fake pool answered. */
const startReads: string[] = [];

class FakeLeases {
  readonly log: string[] = [];
  released: Lease[] = [];
  next: Lease | null = { sessionId: SESSION, owner: 'w1', epoch: 1, tookOver: false };
  acquire(): Promise<Lease | null> {
    this.log.push('acquire');
    return Promise.resolve(this.next);
  }
  renew(): Promise<boolean> {
    return Promise.resolve(true);
  }
  release(lease: Lease): Promise<void> {
    this.log.push('release');
    this.released.push(lease);
    return Promise.resolve();
  }
  /** The driver's release at the end of driving: nothing more to do. */
  releaseAndCheckWork(lease: Lease): Promise<boolean> {
    return this.release(lease).then(() => false);
  }
}

function setUp(ds: DataSource = idleDataSource()) {
  const leases = new FakeLeases();
  /** The error lines the driver logged (a failed turn). */
  const errors: string[] = [];
  const published: Array<{ subject: string; body: unknown }> = [];
  const bus = {
    publish: ({ subject }: { subject: string }, body: unknown) => published.push({ subject, body }),
    call: () => Promise.reject(new Error('no bus in this test')),
  } as unknown as Bus;
  const turnState = {
    turnControl: () => Promise.resolve({ stop: false, role: 'user' as const }),
    stopRequested: () => Promise.resolve(false),
    clearStop: () => Promise.resolve(),
    turnState: () => Promise.resolve('finished'),
  } as unknown as TurnStateRepository;
  const registry = new Registry();
  const metrics = new TurnMetrics(registry);
  const driver = new TurnDriver(
    ds,
    bus,
    leases as unknown as LeaseRepository,
    turnState,
    { announce: () => undefined, sinkFor: () => ({ emit: () => undefined }) } as unknown as EventAnnouncer,
    metrics,
    { forTurn: () => ({}) } as unknown as AgentCatalogService,
    {} as LlmManager,
    {} as LlmService,
    WorkerConfigSchema.parse({}),
    'w1',
    pino({ level: 'error' }, { write: (line: string) => errors.push(line) }),
  );
  const takeovers = async (): Promise<number> =>
    (await registry.getSingleMetric('skald_lease_takeovers_total')!.get()).values[0]?.value ?? 0;
  const started = async (): Promise<number> =>
    (await registry.getSingleMetric('skald_turns_started_total')!.get()).values[0]?.value ?? 0;
  return { driver, leases, published, takeovers, errors, started };
}

describe('TurnDriver', () => {
  it('drives a session holding its lease and releases it afterwards', async () => {
    const { driver, leases, errors } = setUp();
    startReads.length = 0;
    await driver.drive(SESSION);
    expect(leases.log).toEqual(['acquire', 'release']);
    // One read under the lease (the turn's start read) found nothing to do; nothing failed.
    expect(startReads).toEqual([TURN_START_NAME]);
    expect(errors).toEqual([]);
    expect(driver.isDriving(SESSION)).toBe(false);
    expect(driver.activeCount).toBe(0);
  });

  it('a submit and its doorbell arriving together ask for the lease once', async () => {
    const { driver, leases } = setUp();
    await Promise.all([driver.drive(SESSION), driver.drive(SESSION)]);
    expect(leases.log).toEqual(['acquire', 'release']);
  });

  it('leaves a session alone when another worker holds its lease', async () => {
    const { driver, leases } = setUp();
    leases.next = null;
    await driver.drive(SESSION);
    expect(leases.log).toEqual(['acquire']);
  });

  it('counts a lease takeover only when the lease was taken from an owner whose lease expired', async () => {
    const { driver, leases, takeovers } = setUp();
    // Released by its last owner and taken again: the epoch grows, nobody was taken over.
    leases.next = { sessionId: SESSION, owner: 'w1', epoch: 7, tookOver: false };
    await driver.drive(SESSION);
    expect(await takeovers()).toBe(0);
    leases.next = { sessionId: SESSION, owner: 'w1', epoch: 8, tookOver: true };
    await driver.drive(SESSION);
    expect(await takeovers()).toBe(1);
  });

  it('SIGTERM hands a session over without ending its turn: the lease is released before the turn is told to stop', async () => {
    const { driver, leases, published } = setUp();
    let releasedWhenAborted: boolean | null = null;
    const holding = driver.withLease(
      SESSION,
      (_store, signal) =>
        new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => {
            // Whatever the turn writes from here on must be fenced (the lease is gone).
            releasedWhenAborted = leases.released.length > 0;
            resolve();
          }),
        ),
    );
    await new Promise((r) => setImmediate(r));
    expect(driver.isDriving(SESSION)).toBe(true);
    await driver.drainAll(0);
    await holding;
    expect(releasedWhenAborted).toBe(true);
    expect(published).toContainEqual({
      subject: expect.stringContaining(SESSION),
      body: { session_id: SESSION, reason: 'handover' },
    });
  });

  it('drives with a lease the submit took: no ask, the start read after it, released afterwards', async () => {
    const { driver, leases, published } = setUp();
    startReads.length = 0;
    await driver.driveWith({ sessionId: SESSION, owner: 'w1', epoch: 4, tookOver: false });
    expect(leases.log).toEqual(['release']);
    expect(startReads).toEqual([TURN_START_NAME]);
    expect(published).toEqual([]);
    expect(driver.isDriving(SESSION)).toBe(false);
  });

  it("drives with the submit's start read: its first turn reads nothing more", async () => {
    const { driver, leases } = setUp();
    startReads.length = 0;
    const row = {
      session: JSON.stringify({ id: SESSION, user_id: 'u1', agent_id: 'main', source: 'web', turn_state: 'finished' }),
      complete: false,
      inbox: '[]',
      frames: '[]',
    };
    await driver.driveWith(
      { sessionId: SESSION, owner: 'w1', epoch: 4, tookOver: false },
      { row, carried: [], at: Date.now() },
    );
    expect(startReads).toEqual([]);
    expect(leases.log).toEqual(['release']);
    expect(driver.isDriving(SESSION)).toBe(false);
  });

  it('asks the submit to take only sessions it neither drives nor asks for, and none while draining', async () => {
    const { driver, leases } = setUp();
    expect(driver.leaseAsk()).toEqual({
      owner: 'w1',
      ttlMs: 4_000,
      busy: [],
      carried: [],
      enter: { frameId: expect.any(String), at: expect.any(Date) },
    });
    // Each ask names a fresh root frame for the statement to open if it enters the message.
    expect(driver.leaseAsk()?.enter.frameId).not.toBe(driver.leaseAsk()?.enter.frameId);
    let asked: (v: null) => void = () => undefined;
    leases.acquire = () => new Promise((r) => (asked = r));
    const asking = driver.drive(SESSION);
    expect(driver.leaseAsk()?.busy).toEqual([SESSION]);
    asked(null);
    await asking;
    expect(driver.leaseAsk()?.busy).toEqual([]);
    await driver.drainAll(0);
    expect(driver.leaseAsk()).toBeNull();
  });

  it('a lease taken by a submit it may not use is released at once and the doorbell rung', async () => {
    const { driver, leases, published } = setUp();
    // Already driving the session here (under an older lease): the new one is let go.
    let finish: () => void = () => undefined;
    const holding = driver.withLease(SESSION, () => new Promise<void>((r) => (finish = r)));
    await new Promise((r) => setImmediate(r));
    const taken = { sessionId: SESSION, owner: 'w1', epoch: 9, tookOver: true };
    await driver.driveWith(taken);
    expect(leases.released).toEqual([taken]);
    expect(published).toContainEqual({
      subject: expect.stringContaining(SESSION),
      body: { session_id: SESSION, reason: 'input' },
    });
    finish();
    await holding;
    // Draining: released, handed over.
    await driver.drainAll(0);
    published.length = 0;
    await driver.driveWith(taken);
    expect(leases.released.filter((l) => l === taken)).toHaveLength(2);
    expect(published).toEqual([
      { subject: expect.stringContaining(SESSION), body: { session_id: SESSION, reason: 'handover' } },
    ]);
  });

  it('a doorbell that rings while the session is driven here, after its last look at the inbox, drives it again after the release', async () => {
    // The release's own check can miss such a message: its statement's snapshot may predate the
    // submit's commit, whose statement saw the lease still held and so did not take it (the doorbell
    // is then all that is left; without this the message waits for the sweep).
    const ds = idleDataSource();
    const master = (ds as unknown as { driver: { master: { query: (c: { name: string }) => Promise<unknown> } } })
      .driver.master;
    const answer = master.query;
    let looked: () => void = () => undefined;
    const lookedAt = new Promise<void>((r) => (looked = r));
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    master.query = async (config) => {
      looked();
      await gate;
      return answer(config);
    };
    const { driver, leases } = setUp(ds);
    startReads.length = 0;
    const driving = driver.drive(SESSION);
    await lookedAt;
    // The submit's doorbell, while the start read (the last look) is under way.
    await driver.drive(SESSION);
    release();
    await driving;
    await new Promise((r) => setTimeout(r, 20));
    expect(leases.log).toEqual(['acquire', 'release', 'acquire', 'release']);
    expect(startReads).toEqual([TURN_START_NAME, TURN_START_NAME]);
  });

  it('a doorbell that rang before the last look at the inbox drives nothing more', async () => {
    const ds = idleDataSource();
    const { driver, leases } = setUp(ds);
    let acquired: (l: Lease | null) => void = () => undefined;
    leases.acquire = () => {
      leases.log.push('acquire');
      return new Promise((r) => (acquired = r));
    };
    startReads.length = 0;
    const driving = driver.drive(SESSION);
    // The doorbell while the lease is being asked for: the start read comes after it.
    await driver.drive(SESSION);
    acquired({ sessionId: SESSION, owner: 'w1', epoch: 1, tookOver: false });
    await driving;
    await new Promise((r) => setTimeout(r, 20));
    expect(leases.log).toEqual(['acquire', 'release']);
    expect(startReads).toEqual([TURN_START_NAME]);
  });

  it('takes no session once draining', async () => {
    const { driver, leases } = setUp();
    await driver.drainAll(0);
    await driver.drive(SESSION);
    expect(leases.log).toEqual([]);
  });

  it('a turn from the inbox whose lease is lost before its first commit is not counted as started (the next driver starts it)', async () => {
    // Found queued under the lease, but the commit that enters it is fenced: another driver holds
    // the session now and starts the same message again. Counted there, never here as well.
    const session = {
      id: SESSION,
      user_id: 'u1',
      agent_id: 'main',
      source: 'web',
      turn_state: 'finished',
      turn_id: null,
    };
    const item = {
      id: '00000000-0000-4000-8000-0000000000a1',
      session_id: SESSION,
      client_message_id: 'c1',
      content: 'hello',
      delivery: 'steer',
      created_at: new Date().toISOString(),
    };
    const ds = {
      query: (sql: string): Promise<unknown[]> =>
        Promise.resolve(
          /user_turns_running/.test(sql)
            ? [{ ok: true, mine: true }]
            : /FROM sessions s\s+LEFT JOIN llm_client_pins/.test(sql)
              ? [session]
              : [],
        ),
      driver: {
        master: {
          query: (config: { name: string }): Promise<{ rows: unknown[] }> =>
            Promise.resolve({
              rows:
                config.name === TURN_START_NAME
                  ? [{ session: JSON.stringify(session), complete: false, inbox: JSON.stringify([item]), frames: '[]' }]
                  : [{ fenced: 0 }],
            }),
        },
      },
    } as unknown as DataSource;
    const { driver, leases, started } = setUp(ds);
    await driver.drive(SESSION);
    expect(leases.log).toEqual(['acquire', 'release']);
    expect(await started()).toBe(0);
  });
});
