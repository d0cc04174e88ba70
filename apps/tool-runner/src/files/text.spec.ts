import { displayLines, looksBinary, MAX_LINE_CHARS, numbered } from './text';

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
});
