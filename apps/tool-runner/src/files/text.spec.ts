import { displayLines, globMatcher, looksBinary, MAX_LINE_CHARS, numbered } from './text';

describe('text helpers', () => {
  it('detects binary content by NUL bytes and control characters', () => {
    expect(looksBinary(Buffer.from('plain text\nwith lines\n'))).toBe(false);
    expect(looksBinary(Buffer.from('utf-8 ✓ é 日本\n'))).toBe(false);
    expect(looksBinary(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]))).toBe(true);
    expect(looksBinary(Buffer.from('\x01\x02\x03\x04\x05abc'))).toBe(true);
    expect(looksBinary(Buffer.alloc(0))).toBe(false);
  });

  it('numbers lines like cat -n and caps long lines', () => {
    expect(numbered(7, 'x')).toBe('     7\tx');
    expect(numbered(1, 'y'.repeat(MAX_LINE_CHARS + 5))).toMatch(/… \[line cut: 5 more characters\]$/);
    expect(displayLines('a\r\nb\n')).toEqual(['a', 'b']);
    expect(displayLines('a\n\n')).toEqual(['a', '']);
    expect(displayLines('')).toEqual([]);
  });

  it('matches globs on base names or relative paths', () => {
    const ts = globMatcher('*.ts');
    expect(ts('src/a.ts')).toBe(true);
    expect(ts('a.tsx')).toBe(false);
    expect(globMatcher('*.{ts,js}')('lib/x.js')).toBe(true);
    expect(globMatcher('src/**/*.ts')('src/a/b/c.ts')).toBe(true);
    expect(globMatcher('src/**/*.ts')('src/c.ts')).toBe(true);
    expect(globMatcher('src/**/*.ts')('lib/c.ts')).toBe(false);
    expect(globMatcher('src/*.ts')('src/a/b.ts')).toBe(false);
    expect(globMatcher('file?.[ch]')('file1.c')).toBe(true);
    expect(globMatcher('[!a]*')('bcd')).toBe(true);
    expect(globMatcher('a.b')('aXb')).toBe(false);
    expect(globMatcher('(x)+')('(x)+')).toBe(true);
  });
});
