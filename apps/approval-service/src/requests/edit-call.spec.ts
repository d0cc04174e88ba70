import fc from 'fast-check';
import { EditedArguments, EDITED_ARGUMENTS_MAX_CHARS } from '@skald/contracts';
import { canonical, describeEdit, MAX_EDIT_DIFF_CHARS } from './edit-call';

/**
 * The edit's diff is built from what a person typed and what the model wrote: any text (NUL, lone
 * surrogates, bidi, U+2028, CRLF, huge) gives a bounded diff in bounded time, and never throws.
 */

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.log(`edit diff properties: seed ${SEED} (FC_SEED=${SEED} replays)`);

const hostile = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.constantFrom('\u0000', '\uD800', '\uDC00x', '\u202E', '\u2028', '\uFEFF', '\r\n', '\n\n\n', ''),
  fc.array(fc.constantFrom('a\n', '\u0000\n', '\uD83D\n', 'x'), { maxLength: 50 }).map((a) => a.join('')),
);

describe('describeEdit', () => {
  it('never throws on hostile text and names exactly the changed arguments (1,000 runs)', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom('command', 'path', 'content', 'workdir'), hostile),
        fc.dictionary(fc.constantFrom('command', 'path', 'content', 'workdir'), hostile),
        (a, b) => {
          const d = describeEdit(a, b);
          expect(d.length).toBeLessThanOrEqual(MAX_EDIT_DIFF_CHARS + 100);
          for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
            const changed = a[k] !== b[k];
            expect(d.includes(`--- ${k} (original)`)).toBe(changed);
          }
        },
      ),
      { seed: SEED, numRuns: 1000 },
    );
  });

  it('a huge rewrite is bounded: every line changed of 20,000 reads as replaced, fast', () => {
    const before = Array.from({ length: 20_000 }, (_, i) => `line ${i}`).join('\n');
    const after = Array.from({ length: 20_000 }, (_, i) => `other ${i}`).join('\n');
    const started = performance.now();
    const d = describeEdit({ content: before }, { content: after });
    // the diff gives up at MAX_EDIT_DIFF_MS; the rest is splitting and joining lines
    expect(performance.now() - started).toBeLessThan(1_500);
    expect(d).toContain('@@ replaced: 20000 lines → 20000 lines @@');
  });

  it('a long diff stops at its bound and says how much is left', () => {
    const d = describeEdit(
      { content: Array.from({ length: 200 }, (_, i) => `a${i}`.padEnd(400, '.')).join('\n') },
      { content: Array.from({ length: 200 }, (_, i) => `b${i}`.padEnd(400, '.')).join('\n') },
      // the size bound is what this is about: on a loaded machine 400 changed lines can take past the time bound
      60_000,
    );
    expect(d.length).toBeLessThanOrEqual(MAX_EDIT_DIFF_CHARS + 100);
    expect(d).toMatch(/… \d+ more characters of the diff$/);
  });
});

describe('EditedArguments (the wire bound)', () => {
  it('refuses arguments past 512 KiB of JSON, and a non-object', () => {
    expect(EditedArguments.safeParse({ content: 'x'.repeat(EDITED_ARGUMENTS_MAX_CHARS) }).success).toBe(false);
    expect(EditedArguments.safeParse({ content: 'x'.repeat(1000) }).success).toBe(true);
    expect(EditedArguments.safeParse(['ls']).success).toBe(false);
    expect(EditedArguments.safeParse('ls').success).toBe(false);
  });

  it('canonical JSON ignores key order only', () => {
    expect(canonical({ a: 1, b: { d: 2, c: 3 } })).toBe(canonical({ b: { c: 3, d: 2 }, a: 1 }));
    expect(canonical({ a: '1' })).not.toBe(canonical({ a: 1 }));
  });
});
