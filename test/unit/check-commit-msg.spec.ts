// scripts/check-commit-msg.js: the commit-msg hook and `npm run lint` hold commit messages to a subject of at
// most 72 characters (grapheme clusters), no final period, and a blank line before the body.
import fc from 'fast-check';

interface Checker {
  MAX_SUBJECT: number;
  checkMessage(raw: string): string[];
  characterCount(text: string): number;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const checker = require('../../scripts/check-commit-msg.js') as Checker;
const { MAX_SUBJECT, checkMessage, characterCount } = checker;

/** One user-perceived character each, in one, two and up to seven code points; none merges with a neighbour. */
const GRAPHEMES = ['a', 'Z', '7', '-', ':', 'ß', 'Ω', '字', 'é', 'n\u0303', '🇸🇪', '👩‍💻', '👍🏽', 'ก'];
const INNER = [...GRAPHEMES, ' '];

/** A subject of exactly `n` characters that starts and ends with a visible non-period character. */
const subjectOf = (n: number): fc.Arbitrary<string> =>
  fc
    .tuple(
      fc.constantFrom(...GRAPHEMES),
      fc.array(fc.constantFrom(...INNER), { minLength: Math.max(0, n - 2), maxLength: Math.max(0, n - 2) }),
      fc.constantFrom(...GRAPHEMES),
    )
    .map(([first, middle, last]) => (n === 1 ? first : first + middle.join('') + last));

const subjectAround72 = fc
  .integer({ min: MAX_SUBJECT - 8, max: MAX_SUBJECT + 8 })
  .chain((n) => subjectOf(n).map((subject) => ({ n, subject })));

describe('check-commit-msg', () => {
  it('counts grapheme clusters, not UTF-16 units or code points', () => {
    expect(characterCount('e\u0301')).toBe(1);
    expect(characterCount('👩‍💻')).toBe(1);
    expect(characterCount('🇸🇪🇫🇮')).toBe(2);
    expect(characterCount('字字')).toBe(2);
  });

  it('accepts a subject of at most 72 characters and refuses a longer one, whatever its script', () => {
    fc.assert(
      fc.property(subjectAround72, ({ n, subject }) => {
        expect(characterCount(subject)).toBe(n);
        const problems = checkMessage(`${subject}\n`);
        if (n <= MAX_SUBJECT) expect(problems).toEqual([]);
        else expect(problems).toEqual([`the subject has ${n} characters, at most ${MAX_SUBJECT} are allowed`]);
      }),
    );
  });

  it('refuses a subject that ends with a period, at any length', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX_SUBJECT - 1 }).chain(subjectOf), (subject) => {
        expect(checkMessage(`${subject}.`)).toEqual(['the subject ends with a period']);
      }),
    );
  });

  it('wants a blank line between the subject and a body', () => {
    fc.assert(
      fc.property(subjectOf(40), subjectOf(30), (subject, body) => {
        expect(checkMessage(`${subject}\n\n${body}\n`)).toEqual([]);
        expect(checkMessage(`${subject}\n${body}\n`)).toEqual([
          'the subject and the body need a blank line between them',
        ]);
      }),
    );
  });

  it('reports every problem of a message at once', () => {
    const subject = `${'x'.repeat(80)}.`;

    expect(checkMessage(`${subject}\nbody`)).toEqual([
      'the subject has 81 characters, at most 72 are allowed',
      'the subject ends with a period',
      'the subject and the body need a blank line between them',
    ]);
  });

  it('reads the message as git stores it: comments, the scissors part and blank edges dropped', () => {
    const editor = [
      '',
      'Subject of the change  ',
      '# Please enter the commit message for your changes.',
      '',
      'Why, with the evidence.',
      '# ------------------------ >8 ------------------------',
      'diff --git a/x b/x',
      '',
    ].join('\n');

    expect(checkMessage(editor)).toEqual([]);
    expect(checkMessage('# only a comment\n\n')).toEqual(['the message is empty']);
    expect(checkMessage('Subject\r\n\r\nBody\r\n')).toEqual([]);
  });
});
