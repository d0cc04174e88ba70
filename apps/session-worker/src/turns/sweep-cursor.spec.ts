import fc from 'fast-check';
import { FIRST_ID } from '../sessions/sessions.repository';
import { SweepCursor } from './sweep-cursor';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

/** A keyset-paged query over a set of ids, as the repository answers it. */
const pageOf = (ids: Iterable<string>) => async (limit: number, after: string) =>
  [...ids]
    .filter((id) => id > after)
    .sort()
    .slice(0, limit);

const id = (n: number): string => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

describe('SweepCursor', () => {
  it('walks 25 parked turns 10 a sweep: the last one is reached on the third sweep, then it starts over', async () => {
    const parked = Array.from({ length: 25 }, (_, i) => id(i));
    const cursor = new SweepCursor(10);
    const sweeps: string[][] = [];
    for (let s = 0; s < 4; s++) sweeps.push(await cursor.next(pageOf(parked)));
    expect(sweeps.map((p) => p.length)).toEqual([10, 10, 5, 10]);
    expect(new Set(sweeps.slice(0, 3).flat())).toEqual(new Set(parked));
    expect(sweeps[3][0]).toBe(parked[0]);
  });

  it('starts from below every id', async () => {
    const seen: string[] = [];
    await new SweepCursor(3).next(async (_n, after) => (seen.push(after), []));
    expect(seen).toEqual([FIRST_ID]);
  });

  it(`one pass (up to its short last page) visits every id that stays in the set, whatever comes and goes (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 12 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 500 }), { maxLength: 60 }),
        fc.array(fc.array(fc.integer({ min: 0, max: 500 }), { maxLength: 5 }), { minLength: 1, maxLength: 40 }),
        async (page, stayingNums, churn) => {
          // Staying ids are even, the ones that come and go between sweeps odd: interleaved.
          const staying = stayingNums.map((n) => id(2 * n));
          const cursor = new SweepCursor(page);
          const visited = new Set<string>();
          for (let s = 0; s < 10_000; s++) {
            const transient = (churn[s % churn.length] ?? []).map((n) => id(2 * n + 1));
            const got = await cursor.next(pageOf([...staying, ...transient]));
            for (const v of got) visited.add(v);
            if (got.length < page) break;
          }
          expect(staying.filter((v) => !visited.has(v))).toEqual([]);
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });
});
