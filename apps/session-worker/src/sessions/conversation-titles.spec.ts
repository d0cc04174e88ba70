import fc from 'fast-check';
import { cleanTitle, fallbackTitle, TITLE_MAX_CHARS, TITLE_SOURCE_CHARS, titleRequest } from './conversation-titles';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

describe('conversation titles', () => {
  beforeAll(() => console.log(`title property seed ${SEED} (replay: FC_SEED=${SEED})`));

  it('keeps the first line of the answer without quotes, a "Title:" prefix or end punctuation', () => {
    expect(cleanTitle('"Planning the Q3 launch."')).toBe('Planning the Q3 launch');
    expect(cleanTitle('Title: Fixing the flaky build\nBecause it fails')).toBe('Fixing the flaky build');
    expect(cleanTitle('\n\n  **Bread recipes**  \n')).toBe('Bread recipes');
    expect(cleanTitle('# Heading title')).toBe('Heading title');
    expect(cleanTitle('<think>hmm, a title</think>Trip to Lisbon')).toBe('Trip to Lisbon');
    expect(cleanTitle('  \n "" \n')).toBeNull();
    expect(cleanTitle('')).toBeNull();
  });

  it('cuts a long title at a word boundary', () => {
    const t = cleanTitle(Array.from({ length: 40 }, (_, i) => `word${i}`).join(' '));
    expect(t).not.toBeNull();
    expect([...t!].length).toBeLessThanOrEqual(TITLE_MAX_CHARS + 1);
    expect(t!.endsWith('…')).toBe(true);
    expect(t!.slice(0, -1)).toMatch(/word\d+$/);
  });

  it('any model output becomes one bounded line without control characters, or nothing', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 400 }), (raw) => {
        const t = cleanTitle(raw);
        if (t === null) return;
        expect(t.length).toBeGreaterThan(0);
        expect([...t].length).toBeLessThanOrEqual(TITLE_MAX_CHARS + 1);
        // eslint-disable-next-line no-control-regex
        expect(t).not.toMatch(/[\u0000-\u001f\u007f\u2028\u2029]/);
        expect(t).toBe(t.trim());
      }),
      { seed: SEED, numRuns: 5_000 },
    );
  });

  it('the title request carries a bounded part of the first exchange', () => {
    const long = 'x'.repeat(TITLE_SOURCE_CHARS * 3);
    const [system, user] = titleRequest(long, long);
    expect(system.role).toBe('system');
    expect(user.content.length).toBeLessThan(TITLE_SOURCE_CHARS * 2 + 100);
  });

  it('falls back to the start of the question', () => {
    expect(fallbackTitle('how do I\nbake bread?')).toBe('how do I bake bread');
    expect(fallbackTitle('   ')).toBe('Conversation');
  });
});
