import assert from 'node:assert/strict';
import fc from 'fast-check';
import { resolvePathAgainst, WORKSPACE_ROOT } from '@skald/contracts';
import { candidateNames, sanitizeUploadName, UPLOAD_NAME_MAX_BYTES } from './upload-name';

// A failing property prints its seed; FC_SEED=<seed> replays it.
const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;
const RUNS = 5000;

/** Names as hostile clients send them: traversal, NUL and control bytes, slashes, unicode, reserved, long. */
const hostileName = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 400 }),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc
    .array(
      fc.constantFrom(
        '..',
        '.',
        '/',
        '\\',
        '\0',
        '\n',
        '\u202e',
        ' ',
        '-',
        'CON',
        'nul',
        'LPT1',
        'a',
        'é',
        'e\u0301',
        '😀',
        '.txt',
        '%2e',
      ),
      { maxLength: 40 },
    )
    .map((parts) => parts.join('')),
  fc.string({ maxLength: 5 }).map((s) => `${s}${'x'.repeat(600)}.pdf`),
);

/**
 * The properties a stored name keeps. Checked with node:assert, not `expect`: a property runs it
 * thousands of times, and each `expect` call costs an error object with its stack.
 */
const ok = (name: string, maxBytes = UPLOAD_NAME_MAX_BYTES): void => {
  assert.ok(name.length > 0, 'a name is never empty');
  assert.ok(Buffer.byteLength(name, 'utf8') <= maxBytes, `${JSON.stringify(name)} is over ${maxBytes} bytes`);
  // eslint-disable-next-line no-control-regex
  assert.doesNotMatch(name, /[/\\\u0000-\u001f\u007f\u202e]/);
  assert.doesNotMatch(name, /^[.\-\s]/);
  assert.doesNotMatch(name, /[.\s]$/);
  assert.doesNotMatch(name.split('.')[0], /^(con|prn|aux|nul|com\d|lpt\d)$/i);
  // Stored under uploads/ and nowhere else, whatever the name.
  const r = resolvePathAgainst(
    `${WORKSPACE_ROOT}/uploads/${name}`,
    { kind: 'workspace', virtual: WORKSPACE_ROOT, segments: [] },
    'path',
  );
  assert.deepStrictEqual(r.ok && r.value.kind === 'workspace' && r.value.segments, ['uploads', name]);
};

describe('sanitizeUploadName', () => {
  it('keeps every generated name to one safe segment under uploads/, idempotently', () => {
    fc.assert(
      fc.property(hostileName, (raw) => {
        const name = sanitizeUploadName(raw);
        ok(name);
        assert.strictEqual(sanitizeUploadName(name), name);
        // A taken name gets ` (n)`: still one safe segment within the file system's 255 bytes.
        for (const c of candidateNames(name, 1000).slice(-2)) ok(c, 255);
      }),
      { seed, numRuns: RUNS },
    );
  });

  it.each([
    ['../../etc/passwd', 'passwd'],
    ['..', 'upload'],
    ['C:\\Users\\me\\report final.pdf', 'report final.pdf'],
    ['.bashrc', 'bashrc'],
    ['-rf', 'rf'],
    ['CON.txt', 'file_CON.txt'],
    ['a\0b.txt', 'a_b.txt'],
    ['Ünïcödé 日本.md', 'Ünïcödé 日本.md'],
    ['e\u0301.txt', 'é.txt'],
  ])('%j → %j', (raw, want) => {
    expect(sanitizeUploadName(raw)).toBe(want);
  });

  it('keeps the extension of a very long name', () => {
    const name = sanitizeUploadName(`${'ж'.repeat(500)}.csv`);
    expect(name.endsWith('.csv')).toBe(true);
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(UPLOAD_NAME_MAX_BYTES);
  });
});
