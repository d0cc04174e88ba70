import fc from 'fast-check';

/** The faults the chaos run injects, one at a time. */
export const FAULT_KINDS = ['kill', 'stop', 'nats', 'redis', 'pg', 'pgterm'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The apps a `kill` or `stop` hits (every one of the five). */
export const CHAOS_APPS = ['gateway', 'session-worker', 'approval-service', 'tool-runner', 'scheduler'] as const;
export type ChaosApp = (typeof CHAOS_APPS)[number];

/** The faults that hit one app's process. */
export const APP_FAULTS = ['kill', 'stop'] as const satisfies readonly FaultKind[];
export type AppFault = (typeof APP_FAULTS)[number];
export const isAppFault = (k: FaultKind): k is AppFault => (APP_FAULTS as readonly FaultKind[]).includes(k);

/** What a conversation's message asks the model to do (each scripted in llm-sim). */
export const MESSAGE_KINDS = ['plain', 'effect', 'approval', 'delegate'] as const;
export type MessageKind = (typeof MESSAGE_KINDS)[number];

export interface FaultStep {
  kind: FaultKind;
  /** The app a `kill` / `stop` hits. */
  app: ChaosApp;
  /** Which live process of that app (modulo their number). */
  pick: number;
  /** How long the fault lasts before it is healed (restart, SIGCONT, server started again). */
  holdMs: number;
  /** Quiet time after the fault's recovery was measured, before the next fault. */
  gapMs: number;
}

export interface ChaosPlan {
  faults: FaultStep[];
  /** The kinds of the messages, read round-robin by every conversation from its own offset. */
  messages: MessageKind[];
}

const PLAN_FAULTS = 400;
const PLAN_MESSAGES = 997;

/**
 * Everything random in a chaos run, drawn from `seed` by fast-check (unbiased): the same seed gives
 * the same faults, in the same order, on the same apps, and the same message kinds. (When each
 * fault lands in a turn depends on timing, which no seed fixes.)
 */
export function chaosPlan(seed: number): ChaosPlan {
  const step = fc.record({
    kind: fc.constantFrom(...FAULT_KINDS),
    app: fc.constantFrom(...CHAOS_APPS),
    pick: fc.nat({ max: 1000 }),
    holdMs: fc.integer({ min: 500, max: 6000 }),
    gapMs: fc.integer({ min: 1000, max: 5000 }),
  });
  const plan = fc.record({
    faults: fc.array(step, { minLength: PLAN_FAULTS, maxLength: PLAN_FAULTS }),
    messages: fc.array(fc.constantFrom(...MESSAGE_KINDS), { minLength: PLAN_MESSAGES, maxLength: PLAN_MESSAGES }),
  });
  return fc.sample(fc.noBias(plan), { seed, numRuns: 1 })[0];
}

/** The message kind of conversation `c`'s `k`-th message. */
export function messageKind(plan: ChaosPlan, c: number, k: number): MessageKind {
  return plan.messages[(c * 131 + k) % plan.messages.length];
}
