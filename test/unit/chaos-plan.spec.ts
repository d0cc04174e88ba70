import { chaosOptionsFromEnv, SHORT_RUN } from '../chaos/options';
import { ChaosReport, figuresLine } from '../chaos/chaos';
import { CHAOS_APPS, chaosPlan, FAULT_KINDS, MESSAGE_KINDS } from '../chaos/plan';

describe('chaos plan and options', () => {
  it('one seed, one plan: the same faults and message kinds again; another seed, others', () => {
    const a = chaosPlan(123);
    expect(chaosPlan(123)).toEqual(a);
    expect(chaosPlan(124)).not.toEqual(a);
    // Every fault kind and message kind is drawn (not a biased few).
    expect(new Set(a.faults.slice(0, 60).map((f) => f.kind))).toEqual(new Set(FAULT_KINDS));
    expect(new Set(a.messages.slice(0, 60))).toEqual(new Set(MESSAGE_KINDS));
  });

  it('reads the seed, duration and conversations from the environment; refuses what is not a number', () => {
    expect(chaosOptionsFromEnv({ CHAOS_SEED: '7', CHAOS_DURATION_S: '30', CHAOS_CONVERSATIONS: '2' })).toEqual({
      seed: 7,
      durationMs: 30_000,
      conversations: 2,
    });
    const d = chaosOptionsFromEnv({});
    expect(d).toMatchObject({ durationMs: SHORT_RUN.durationS * 1000, conversations: SHORT_RUN.conversations });
    expect(Number.isSafeInteger(d.seed)).toBe(true);
    expect(() => chaosOptionsFromEnv({ CHAOS_SEED: 'abc' })).toThrow('CHAOS_SEED must be an integer ≥ 0, got "abc"');
    expect(() => chaosOptionsFromEnv({ CHAOS_DURATION_S: '5' })).toThrow('CHAOS_DURATION_S must be an integer ≥ 10');
  });

  it('the figures line counts kills and stops per app, and names the seed and the verdict', () => {
    const zero = () => Object.fromEntries(CHAOS_APPS.map((a) => [a, 0])) as ChaosReport['appFaults']['kill'];
    const report: ChaosReport = {
      seed: 42,
      durationMs: 120_000,
      conversations: 6,
      sent: 10,
      accepted: 10,
      byKind: { plain: 4, effect: 3, approval: 2, delegate: 1 },
      faults: { kill: 3, stop: 1, nats: 1, redis: 0, pg: 0, pgterm: 0 },
      appFaults: { kill: { ...zero(), gateway: 2, 'tool-runner': 1 }, stop: { ...zero(), scheduler: 1 } },
      recoveryMs: { kill: [500, 700, 600], stop: [400], nats: [900], redis: [], pg: [], pgterm: [] },
      approvals: 2,
      cronRuns: 1,
      violations: [],
      counts: {
        lost: 0,
        dup: 0,
        noOutcome: 0,
        effectTwice: 0,
        effectMissing: 0,
        replayGaps: 0,
        replayMismatch: 0,
        dupDelivery: 0,
        stuck: 0,
        cronTwice: 0,
      },
    };
    const line = figuresLine(report);
    expect(line).toContain('chaos seed=42 ');
    expect(line).toContain('faults=kill:3(gateway:2,tool-runner:1) stop:1(scheduler:1) nats:1 redis:0 pg:0 pgterm:0');
    expect(line).toContain('recovery_ms(p50/max)=kill:600/700 stop:400/400 nats:900/900');
    expect(line).toMatch(/violations=0 PASS$/);
  });
});
