import fc from 'fast-check';
import {
  decodeRow,
  deepFromPgText,
  deepToPgText,
  fromPgText,
  hasPoisonCodeUnits,
  PG_TEXT_MARK,
  toPgText,
} from './pg-text';
import { poisonString } from './testing-fixtures/poison-string';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = 5_000;

describe('pg-text codec', () => {
  beforeAll(() => console.log(`pg-text: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`));

  it('round-trips every string, and what it stores has no NUL and no lone surrogate', () => {
    fc.assert(
      fc.property(poisonString(), (s) => {
        const stored = toPgText(s);
        expect(hasPoisonCodeUnits(stored)).toBe(false);
        expect(fromPgText(stored)).toBe(s);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('stores an ordinary string as it is', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (s) => {
        fc.pre(!s.startsWith(PG_TEXT_MARK));
        expect(toPgText(s)).toBe(s);
        expect(fromPgText(s)).toBe(s);
      }),
      { seed: SEED, numRuns: 1_000 },
    );
  });

  it('detects exactly NUL and unpaired surrogates', () => {
    expect(hasPoisonCodeUnits('a\u0000b')).toBe(true);
    expect(hasPoisonCodeUnits('\ud800')).toBe(true);
    expect(hasPoisonCodeUnits('x\udc00')).toBe(true);
    expect(hasPoisonCodeUnits('\ud83d\ude00')).toBe(false);
    expect(hasPoisonCodeUnits('\ud83d\ude00\ud800')).toBe(true);
    expect(hasPoisonCodeUnits('plain \u2028 text')).toBe(false);
  });

  it('deep codec: keys and values of JSON documents, prototype keys kept as data', () => {
    fc.assert(
      fc.property(fc.dictionary(poisonString(), fc.array(poisonString(), { maxLength: 3 }), { maxKeys: 4 }), (doc) => {
        const stored = JSON.stringify(deepToPgText(doc));
        // What a jsonb column is handed: no string (key or value) holds NUL or a lone surrogate.
        const strings: string[] = [];
        JSON.parse(stored, (k, v: unknown) => {
          strings.push(k);
          if (typeof v === 'string') strings.push(v);
          return v;
        });
        expect(strings.filter(hasPoisonCodeUnits)).toEqual([]);
        expect(deepFromPgText(JSON.parse(stored))).toEqual(doc);
      }),
      { seed: SEED, numRuns: 1_000 },
    );
    const evil = JSON.parse('{"__proto__": {"polluted": "\\u0000"}}') as Record<string, unknown>;
    const back = deepFromPgText(JSON.parse(JSON.stringify(deepToPgText(evil)))) as Record<string, unknown>;
    expect(Object.keys(back)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('decodeRow leaves dates, numbers and nulls alone', () => {
    const at = new Date();
    expect(decodeRow({ at, n: 1, x: null, s: toPgText('a\u0000') })).toEqual({ at, n: 1, x: null, s: 'a\u0000' });
  });
});
