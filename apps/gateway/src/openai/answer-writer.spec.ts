import fc from 'fast-check';
import { StopSequences } from './answer-writer';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;

describe('stop sequences', () => {
  it('cut the answer before the first stop, wherever the rounds split it', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: fc.constantFrom('a', 'b', 'c') }), { maxLength: 6 }),
        fc.array(fc.string({ unit: fc.constantFrom('a', 'b', 'c'), minLength: 1, maxLength: 3 }), {
          minLength: 1,
          maxLength: 4,
        }),
        (pieces, stops) => {
          const s = new StopSequences(stops);
          let sent = '';
          for (const p of pieces) {
            sent += s.take(p);
            // Nothing sent ever holds a stop sequence.
            expect(stops.some((x) => sent.includes(x))).toBe(false);
          }
          sent += s.flush();
          const whole = pieces.join('');
          // The oracle: the first prefix of the whole answer that ends with a stop sequence.
          let expected = whole;
          let found = false;
          for (let end = 1; end <= whole.length && !found; end++) {
            const ending = stops.filter((x) => whole.slice(0, end).endsWith(x));
            if (ending.length === 0) continue;
            expected = whole.slice(0, end - Math.max(...ending.map((x) => x.length)));
            found = true;
          }
          expect(sent).toBe(expected);
          expect(s.text).toBe(expected);
          expect(s.hit).toBe(found);
        },
      ),
      { seed, numRuns: 3000 },
    );
  });

  it('let everything through without any', () => {
    const s = new StopSequences(undefined);
    expect(s.take('a') + s.take('b')).toBe('ab');
    expect(s.hit).toBe(false);
  });
});
