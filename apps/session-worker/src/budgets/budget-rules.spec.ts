/**
 * The budget rules, attacked with generated input (fast-check, seed printed on failure):
 * - which limits are in force: an admin's for the user replace the groups'; the groups with a
 *   budget give the most generous per dimension (a null lifts it); groups without one take no part;
 *   the deployment's daily tokens apply only when nobody set a limit;
 * - the admission rule under any interleaving of admissions and answers of concurrent calls (the
 *   calls of one user on many workers, serialised by the per-user lock as the repository does): the
 *   ledger never passes a limit by more than one call, and a call is never refused below a limit
 *   with nothing in flight.
 */
import fc from 'fast-check';
import { BUDGET_DIMENSIONS, NO_BUDGET_LIMITS, type BudgetDimension } from '@skald/contracts';
import {
  admission,
  isCost,
  limitsInForce,
  percentOf,
  resetsAt,
  usedOn,
  type CallSize,
  type Held,
  type Limit,
  type Limits,
  type OwnerBudget,
  type Used,
} from './budget-rules';
import { refusalText } from './budget-texts';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = 3_000;

const limitValue = fc.option(fc.integer({ min: 0, max: 1_000_000 }), { nil: null });
const limitsArb: fc.Arbitrary<Limits> = fc.record({
  tokens_per_day: limitValue,
  tokens_per_month: limitValue,
  cost_usd_per_day: limitValue,
  cost_usd_per_month: limitValue,
});
const ownerArb: fc.Arbitrary<OwnerBudget> = fc.record({
  user: fc.option(limitsArb, { nil: null }),
  groups: fc.uniqueArray(fc.record({ name: fc.string({ minLength: 1, maxLength: 8 }), limits: limitsArb }), {
    maxLength: 5,
    selector: (g) => g.name,
  }),
});
const anyLimit = (l: Limits): boolean => BUDGET_DIMENSIONS.some((d) => l[d] !== null);

describe('limits in force', () => {
  it("an admin's limits for the user replace the groups' and the default", () => {
    fc.assert(
      fc.property(ownerArb, fc.option(fc.nat(), { nil: null }), (owner, dflt) => {
        const user = owner.user;
        fc.pre(user !== null);
        const got = limitsInForce(owner, dflt);
        for (const d of BUDGET_DIMENSIONS) {
          const l = got.find((x) => x.dimension === d);
          expect(l?.limit ?? null).toBe(user[d]);
          if (l) expect(l.setBy).toEqual({ kind: 'user' });
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('groups with a budget: the most generous per dimension, null lifting it; other groups take no part', () => {
    fc.assert(
      fc.property(ownerArb, fc.option(fc.nat(), { nil: null }), (owner, dflt) => {
        const o = { ...owner, user: null };
        const budgeted = o.groups.filter((g) => anyLimit(g.limits));
        const got = limitsInForce(o, dflt);
        if (budgeted.length === 0) {
          expect(got).toEqual(
            dflt === null ? [] : [{ dimension: 'tokens_per_day', limit: dflt, setBy: { kind: 'default' } }],
          );
          return;
        }
        for (const d of BUDGET_DIMENSIONS) {
          const values = budgeted.map((g) => g.limits[d]);
          const expected = values.includes(null) ? null : Math.max(...(values as number[]));
          const l = got.find((x) => x.dimension === d);
          expect(l?.limit ?? null).toBe(expected);
          if (l && l.setBy.kind === 'group') {
            const name = l.setBy.name;
            expect(budgeted.find((g) => g.name === name)!.limits[d]).toBe(expected);
          }
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('a group that only lists agents never lifts a budget', () => {
    const interns = { name: 'Interns', limits: { ...NO_BUDGET_LIMITS, cost_usd_per_day: 5 } };
    const agents = { name: 'Agents', limits: NO_BUDGET_LIMITS };
    expect(limitsInForce({ user: null, groups: [interns, agents] }, 1000)).toEqual([
      { dimension: 'cost_usd_per_day', limit: 5, setBy: { kind: 'group', name: 'Interns' } },
    ]);
  });
});

/** One model of the world: the ledger, the holds, the largest call, and the calls in flight. */
interface World {
  used: Used;
  held: Held;
  largest: CallSize;
  inFlight: { tokens: number; cost: number }[];
}

const addCall = (u: Used, tokens: number, cost: number): Used => ({
  tokensDay: u.tokensDay + tokens,
  tokensMonth: u.tokensMonth + tokens,
  costDay: u.costDay + cost,
  costMonth: u.costMonth + cost,
});

describe('admission under concurrent calls', () => {
  /**
   * A run: a script of steps, each either an attempt to start a call (of a size drawn up front) or
   * the answer of one call in flight. The lock makes each step atomic, as in Postgres. The first
   * call is the largest ("one call's worth"); later calls are at most its size.
   */
  const runArb = fc.record({
    limits: fc.array(
      fc.record({
        dimension: fc.constantFrom(...BUDGET_DIMENSIONS),
        limit: fc.integer({ min: 0, max: 5_000 }),
      }),
      { minLength: 1, maxLength: 4 },
    ),
    maxTokens: fc.integer({ min: 1, max: 800 }),
    steps: fc.array(fc.tuple(fc.boolean(), fc.double({ min: 0, max: 1, noNaN: true }), fc.nat()), {
      minLength: 1,
      maxLength: 200,
    }),
  });

  it("never passes a limit by more than one call's worth, and refuses only at a limit", () => {
    fc.assert(
      fc.property(runArb, ({ limits: raw, maxTokens, steps }) => {
        const limits: Limit[] = raw.map((l) => ({ ...l, setBy: { kind: 'user' } }));
        const price = 0.001; // dollars per token
        const w: World = {
          used: { tokensDay: 0, tokensMonth: 0, costDay: 0, costMonth: 0 },
          held: { inFlight: 0, settledTokens: 0, settledCost: 0 },
          largest: { tokens: 0, costUsd: 0 },
          inFlight: [],
        };
        let first = true;
        let admitted = 0;
        for (const [start, frac, pick] of steps) {
          if (start || w.inFlight.length === 0) {
            const a = admission(limits, w.used, w.held, w.largest);
            if (a.kind === 'refuse') {
              expect(usedOn(w.used, a.limit.dimension)).toBeGreaterThanOrEqual(a.limit.limit);
              continue;
            }
            if (a.kind === 'wait') {
              expect(w.inFlight.length).toBeGreaterThan(0);
              continue;
            }
            const tokens = first ? maxTokens : Math.max(1, Math.round(frac * maxTokens));
            first = false;
            admitted += 1;
            w.inFlight.push({ tokens, cost: tokens * price });
            w.held = { ...w.held, inFlight: w.held.inFlight + 1 };
          } else {
            const [call] = w.inFlight.splice(pick % w.inFlight.length, 1);
            w.used = addCall(w.used, call.tokens, call.cost);
            w.held = { ...w.held, inFlight: w.held.inFlight - 1 };
            w.largest = {
              tokens: Math.max(w.largest.tokens, call.tokens),
              costUsd: Math.max(w.largest.costUsd, call.cost),
            };
          }
          // What is answered and what is in flight: past a limit by at most one call (the largest).
          const pending = w.inFlight.reduce((a, c) => addCall(a, c.tokens, c.cost), w.used);
          for (const l of limits) {
            const oneCall = isCost(l.dimension) ? maxTokens * price : maxTokens;
            expect(usedOn(pending, l.dimension)).toBeLessThan(l.limit + oneCall + 1e-9);
          }
        }
        expect(admitted).toBeGreaterThanOrEqual(0);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('answered calls not yet in the ledger count as used', () => {
    const limit: Limit = { dimension: 'tokens_per_day', limit: 100, setBy: { kind: 'user' } };
    const used = { tokensDay: 60, tokensMonth: 60, costDay: 0, costMonth: 0 };
    expect(
      admission([limit], used, { inFlight: 0, settledTokens: 40, settledCost: 0 }, { tokens: 40, costUsd: 0 }),
    ).toEqual({
      kind: 'refuse',
      limit,
      used: 100,
    });
  });

  it('runs calls side by side far from a limit, one at a time near it; the first call alone', () => {
    const limit: Limit = { dimension: 'tokens_per_day', limit: 1000, setBy: { kind: 'user' } };
    const used = { tokensDay: 0, tokensMonth: 0, costDay: 0, costMonth: 0 };
    const held = (n: number): Held => ({ inFlight: n, settledTokens: 0, settledCost: 0 });
    expect(admission([limit], used, held(1), { tokens: 0, costUsd: 0 }).kind).toBe('wait');
    expect(admission([limit], used, held(3), { tokens: 100, costUsd: 0 }).kind).toBe('admit');
    expect(admission([limit], { ...used, tokensDay: 850 }, held(1), { tokens: 100, costUsd: 0 }).kind).toBe('wait');
    expect(admission([limit], { ...used, tokensDay: 850 }, held(0), { tokens: 100, costUsd: 0 }).kind).toBe('admit');
  });

  it('of two limits reached, names the one that resets last', () => {
    const day: Limit = { dimension: 'tokens_per_day', limit: 10, setBy: { kind: 'user' } };
    const month: Limit = { dimension: 'cost_usd_per_month', limit: 1, setBy: { kind: 'group', name: 'Interns' } };
    const used = { tokensDay: 20, tokensMonth: 20, costDay: 2, costMonth: 2 };
    const a = admission(
      [day, month],
      used,
      { inFlight: 0, settledTokens: 0, settledCost: 0 },
      { tokens: 1, costUsd: 1 },
    );
    expect(a).toMatchObject({ kind: 'refuse', limit: month, used: 2 });
  });
});

describe('texts and periods', () => {
  const now = new Date('2026-12-07T18:48:00.000Z');

  it('the refusal names the limit and who set it, what was used and when it resets (UTC)', () => {
    const interns: Limit = { dimension: 'cost_usd_per_day', limit: 5, setBy: { kind: 'group', name: 'Interns' } };
    expect(refusalText(interns, 5.125, now)).toBe(
      'Your group "Interns" daily cost limit of $5.00 is used up: $5.13 used today (UTC). It resets at 00:00 UTC ' +
        'on 2026-12-08 (in 5 h 12 min); until then the agent cannot call a model for you.',
    );
    const mine: Limit = { dimension: 'tokens_per_month', limit: 2_000_000, setBy: { kind: 'user' } };
    expect(refusalText(mine, 2_000_450, now)).toMatch(
      /^Your monthly token limit of 2,000,000 is used up: 2,000,450 tokens used this month \(UTC\)\. It resets at 00:00 UTC on 2027-01-01 /,
    );
    const dflt: Limit = { dimension: 'tokens_per_day', limit: 20_000, setBy: { kind: 'default' } };
    expect(refusalText(dflt, 25_010, now)).toMatch(
      /^The deployment's daily token limit of 20,000 is used up: 25,010 tokens/,
    );
  });

  it('days and months end at 00:00 UTC', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }), (t) => {
        for (const d of BUDGET_DIMENSIONS as readonly BudgetDimension[]) {
          const r = resetsAt(d, t);
          expect(r.getTime()).toBeGreaterThan(t.getTime());
          expect(r.toISOString()).toMatch(d.endsWith('month') ? /-01T00:00:00\.000Z$/ : /T00:00:00\.000Z$/);
        }
      }),
      { seed: SEED, numRuns: 500 },
    );
    expect(percentOf(79.9, 100)).toBe(79);
    expect(percentOf(0, 0)).toBe(100);
  });
});
