import fc from 'fast-check';

/** Strings as a model, a tool or a user may send them: any UTF-16 code units, poison included. */
export const poisonString = (): fc.Arbitrary<string> =>
  fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.string({ unit: fc.constantFrom('\u0000', '\ud800', '\udfff', '\uffff', 'a', '"', '\\', '\u2028', '\ufeff') }),
    fc.string({ unit: 'grapheme' }),
  );
