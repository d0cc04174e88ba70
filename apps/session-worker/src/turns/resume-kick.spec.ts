import pino from 'pino';
import { WorkerConfigSchema } from '../config';
import type { SessionsRepository } from '../sessions/sessions.repository';
import { ResumeKick } from './resume-kick';
import type { TurnDriver } from './turn-driver';

type Wanted = Awaited<ReturnType<SessionsRepository['driverWanted']>>;

/** What the database says of the session, answer by answer (the last one repeats). */
class FakeSessions {
  answers: Wanted[] = [];
  asked = 0;
  driverWanted(): Promise<Wanted> {
    const a = this.answers[Math.min(this.asked, this.answers.length - 1)];
    this.asked++;
    return Promise.resolve(a);
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

const TTL_MS = 4_000;

function setUp(...answers: Wanted[]) {
  const sessions = new FakeSessions();
  sessions.answers = answers;
  const driver = new FakeDriver();
  const kick = new ResumeKick(
    sessions as unknown as SessionsRepository,
    driver as unknown as TurnDriver,
    WorkerConfigSchema.parse({ SKALD_LEASE_TTL_MS: String(TTL_MS) }),
    pino({ level: 'silent' }),
  );
  return { sessions, driver, kick };
}

describe('ResumeKick: a resumed session whose turn lost its driver', () => {
  afterEach(() => jest.useRealTimers());

  it('no live lease: driven at once', async () => {
    const { driver, kick } = setUp({ now: true });
    await kick.resumed('s');
    expect(driver.driven).toEqual(['s']);
  });

  it('no work, or driven here already: nothing', async () => {
    const idle = setUp(null);
    await idle.kick.resumed('s');
    expect(idle.driver.driven).toEqual([]);
    const here = setUp({ now: true });
    here.driver.busy.add('s');
    await here.kick.resumed('s');
    expect([here.driver.driven, here.sessions.asked]).toEqual([[], 0]);
  });

  it("a dead holder's lease still runs: one look when it runs out, which drives; resumes meanwhile book no more", async () => {
    jest.useFakeTimers();
    const { sessions, driver, kick } = setUp({ leaseLeftMs: 1_200 }, { now: true });
    await kick.resumed('s');
    await kick.resumed('s');
    expect(driver.driven).toEqual([]);
    expect(sessions.asked).toBe(1);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(driver.driven).toEqual([]);
    await jest.advanceTimersByTimeAsync(400);
    expect(driver.driven).toEqual(['s']);
    expect(sessions.asked).toBe(2);
  });

  it('a live holder renewed its lease: the look drives nothing and books no other (the sweep remains)', async () => {
    jest.useFakeTimers();
    const { sessions, driver, kick } = setUp({ leaseLeftMs: 60_000 }, { leaseLeftMs: 3_000 });
    await kick.resumed('s');
    // never later than one lease lifetime, whatever the clock said
    await jest.advanceTimersByTimeAsync(TTL_MS + 200);
    expect(sessions.asked).toBe(2);
    await jest.advanceTimersByTimeAsync(10 * TTL_MS);
    expect([driver.driven, sessions.asked]).toEqual([[], 2]);
    kick.onApplicationShutdown();
  });
});
