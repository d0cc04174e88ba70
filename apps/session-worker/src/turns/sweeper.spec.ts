import pino from 'pino';
import { Registry } from 'prom-client';
import { WorkerConfigSchema } from '../config';
import type { SessionsRepository } from '../sessions/sessions.repository';
import { Sweeper } from './sweeper';
import type { TurnDriver } from './turn-driver';
import { TurnMetrics } from './turn-metrics';

/**
 * The sweep's contract with fakes: what the database reports as needing a driver (queued input, an
 * expired running turn, a stop for a parked turn) or as parked is driven unless this worker drives
 * it already; stuck turns and pending inbox items are published as gauges; a failing query costs
 * one sweep, never the process. The fake repository answers by method, so a sweep that reads its
 * sessions another way (pages, a cursor) only needs the fake extended.
 */
class FakeSessions {
  needing: string[] = [];
  parkedIds: string[] = [];
  stuckIds: string[] = [];
  pending = 0;
  failing = false;
  readonly limits: Record<string, number[]> = { needingDriver: [], parked: [] };

  needingDriver(limit: number): Promise<string[]> {
    this.limits.needingDriver.push(limit);
    return this.failing ? Promise.reject(new Error('connection lost')) : Promise.resolve(this.needing.slice(0, limit));
  }
  parked(limit: number): Promise<string[]> {
    this.limits.parked.push(limit);
    return Promise.resolve(this.parkedIds.slice(0, limit));
  }
  stuck(): Promise<string[]> {
    return Promise.resolve(this.stuckIds);
  }
  inboxPending(): Promise<number> {
    return Promise.resolve(this.pending);
  }
}

class FakeDriver {
  readonly driven: string[] = [];
  readonly busy = new Set<string>();
  isDriving(id: string): boolean {
    return this.busy.has(id);
  }
  drive(id: string): Promise<void> {
    this.driven.push(id);
    return Promise.resolve();
  }
}

function setUp() {
  const sessions = new FakeSessions();
  const driver = new FakeDriver();
  const registry = new Registry();
  const sweeper = new Sweeper(
    sessions as unknown as SessionsRepository,
    driver as unknown as TurnDriver,
    new TurnMetrics(registry),
    WorkerConfigSchema.parse({}),
    pino({ level: 'silent' }),
  );
  const gauge = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]?.value;
  return { sessions, driver, sweeper, gauge };
}

describe('Sweeper', () => {
  it('drives every session with work and no live driver, except those this worker drives already', async () => {
    const { sessions, driver, sweeper } = setUp();
    sessions.needing = ['a', 'b', 'c'];
    driver.busy.add('b');
    await sweeper.sweep();
    expect(driver.driven).toEqual(['a', 'c']);
  });

  it('looks at parked turns (an answer whose doorbell was lost) the same way', async () => {
    const { sessions, driver, sweeper } = setUp();
    sessions.parkedIds = ['p1', 'p2'];
    driver.busy.add('p2');
    await sweeper.sweep();
    expect(driver.driven).toEqual(['p1']);
  });

  it('every read is bounded', async () => {
    const { sessions, sweeper } = setUp();
    await sweeper.sweep();
    for (const limits of Object.values(sessions.limits)) for (const l of limits) expect(l).toBeGreaterThan(0);
    expect(Object.values(sessions.limits).flat().length).toBeGreaterThan(0);
  });

  it('publishes the stuck turns and the pending inbox items', async () => {
    const { sessions, sweeper, gauge } = setUp();
    sessions.stuckIds = ['s1', 's2'];
    sessions.pending = 7;
    await sweeper.sweep();
    expect(await gauge('skald_stuck_turns')).toBe(2);
    expect(await gauge('skald_inbox_pending')).toBe(7);
  });

  it('a failing query ends that sweep quietly; the next sweep works', async () => {
    const { sessions, driver, sweeper } = setUp();
    sessions.needing = ['a'];
    sessions.failing = true;
    await expect(sweeper.sweep()).resolves.toBeUndefined();
    expect(driver.driven).toEqual([]);
    sessions.failing = false;
    await sweeper.sweep();
    expect(driver.driven).toEqual(['a']);
  });
});
