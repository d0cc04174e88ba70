import fc from 'fast-check';
import { StoredText } from './common';
import { failedInARow, notificationLine } from './notify-kinds';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;

describe('failedInARow', () => {
  it('reads as a person writes it: one delivery, several deliveries', () => {
    expect(failedInARow(1)).toBe('1 failed delivery in a row');
    expect(failedInARow(5)).toBe('5 failed deliveries in a row');
  });
});

describe('notificationLine', () => {
  const unit = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 6 }),
    fc.constantFrom('\0', '\uD800', '\uDBFF', '\uDC00', '\uDFFF', '😀', '\u001b', '\u0085', '\u007f', '\n', '\t', ' '),
  );

  it('gives stored text of one line within the bound for any input (generated, NUL and lone surrogates among it)', () => {
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 40 }), fc.integer({ min: 1, max: 60 }), (parts, max) => {
        const line = notificationLine(parts.join(''), max);
        expect(line.length).toBeLessThanOrEqual(max);
        // what Postgres text keeps, judged by Node's own UTF-8 encoder
        expect(Buffer.from(line, 'utf8').toString('utf8')).toBe(line);
        expect(StoredText(max).safeParse(line).success).toBe(true);
        // eslint-disable-next-line no-control-regex
        expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
        expect(line).toBe(line.trim());
      }),
      { seed, numRuns: 2000 },
    );
  });

  it('keeps ordinary text as it is and says where a character was replaced or the text cut', () => {
    expect(notificationLine('  run\n\tls  -la ', 100)).toBe('run ls -la');
    expect(notificationLine('a\u0000b\uD800c', 100)).toBe('a\uFFFDb\uFFFDc');
    expect(notificationLine('abcdef', 4)).toBe('abc…');
    // a cut never halves a character: the emoji goes whole
    expect(notificationLine('ab😀cd', 4)).toBe('ab…');
    expect(notificationLine('ab😀cd', 5)).toBe('ab😀…');
  });
});
