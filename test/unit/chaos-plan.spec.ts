import { chaosOptionsFromEnv, SHORT_RUN } from '../chaos/options';
import { chaosPlan, FAULT_KINDS, MESSAGE_KINDS } from '../chaos/plan';

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
});
