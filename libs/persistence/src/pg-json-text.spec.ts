import fc from 'fast-check';
import { poisonString } from './testing-fixtures/poison-string';
import { deepFromPgText, deepToPgText, parseJsonText, PG_TEXT_MARK } from './pg-text';

/**
 * `parseJsonText` (JSON text read from Postgres, every string through the text codec) against what
 * it replaces, `deepFromPgText(JSON.parse(text))`: the same value for every text, including
 * documents with coded strings and keys, the mark written raw or as a JSON escape in any case (a
 * `json` column keeps its text verbatim), and texts where an escape only looks like the mark.
 */
const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const RUNS = 3_000;

const doc = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    poisonString(),
    fc.constantFrom(PG_TEXT_MARK, `${PG_TEXT_MARK}"x"`, `${PG_TEXT_MARK}1`, 'plain'),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(poisonString(), fc.constantFrom(PG_TEXT_MARK, '__proto__', 'a')), tie('value'), {
      maxKeys: 4,
    }),
  ),
})).value;

/** The JSON text as Postgres may give it: the mark raw, or escaped as \uffff / \uFFFF (a json column's verbatim text). */
const asPostgresText = fc
  .tuple(doc, fc.boolean(), fc.constantFrom('\\uffff', '\\uFFFF', '\\uFfFf'), fc.boolean())
  .map(([v, coded, escape, escapeIt]) => {
    const text = JSON.stringify(coded ? deepToPgText(v) : v);
    return escapeIt ? text.split(PG_TEXT_MARK).join(escape) : text;
  });

describe('parseJsonText', () => {
  beforeAll(() => console.log(`pg-json-text: seed=${SEED} runs=${RUNS} — reproduce with FC_SEED=${SEED}`));

  it('reads every text as deepFromPgText(JSON.parse(text)) does', () => {
    fc.assert(
      fc.property(asPostgresText, (text) => {
        expect(parseJsonText(text)).toStrictEqual(deepFromPgText(JSON.parse(text)));
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('decodes a coded string whose mark is escaped, and leaves a look-alike alone', () => {
    expect(parseJsonText(`["\\uFFFF\\"a\\\\u0000\\""]`)).toEqual(['a\u0000']);
    expect(parseJsonText(`{"k":"\\\\uffff"}`)).toEqual({ k: '\\uffff' });
    expect(parseJsonText(`{"__proto__":{"x":1}}`)).toStrictEqual(deepFromPgText(JSON.parse(`{"__proto__":{"x":1}}`)));
  });
});
