import {
  applyAppend,
  applyEdit,
  applyInsert,
  applyReplaceLines,
  countLines,
  EditError,
  splitKeepEnds,
} from './edit-ops';

const P = '/workspace/f.txt';

describe('edit computations', () => {
  it('splits lines keeping their endings', () => {
    expect(splitKeepEnds('a\nb\r\nc')).toEqual(['a\n', 'b\r\n', 'c']);
    expect(splitKeepEnds('a\n')).toEqual(['a\n']);
    expect(splitKeepEnds('')).toEqual([]);
    expect(countLines('a\nb')).toBe(2);
  });

  describe('applyEdit', () => {
    it('replaces a unique occurrence and reports the line', () => {
      expect(applyEdit('one\ntwo\nthree\n', { old: 'two', new: '2' }, P)).toEqual({
        content: 'one\n2\nthree\n',
        summary: 'Replaced 1 occurrence in /workspace/f.txt (line 2)',
      });
    });
    it('never interprets $ patterns in the new text', () => {
      expect(applyEdit('price: X', { old: 'X', new: "$& $1 $$ $'" }, P).content).toBe("price: $& $1 $$ $'");
    });
    it('refuses an ambiguous old text unless replace_all, listing the lines', () => {
      expect(() => applyEdit('a\nx\na\n', { old: 'a', new: 'b' }, P)).toThrow(
        new EditError(
          'edit_file: `old` occurs 2 times in /workspace/f.txt (at lines 1, 3); include more surrounding text to make it unique, or set replace_all to true',
        ),
      );
      expect(applyEdit('a\nx\na\n', { old: 'a', new: 'b', replaceAll: true }, P)).toEqual({
        content: 'b\nx\nb\n',
        summary: 'Replaced 2 occurrences in /workspace/f.txt (first at line 1)',
      });
    });
    it('says when old is not found, empty, or equal to new', () => {
      expect(() => applyEdit('abc', { old: 'zzz', new: 'y' }, P)).toThrow(/`old` was not found in \/workspace\/f.txt/);
      expect(() => applyEdit('abc', { old: '', new: 'y' }, P)).toThrow(/`old` is empty/);
      expect(() => applyEdit('abc', { old: 'a', new: 'a' }, P)).toThrow(/identical/);
    });
    it('matches LF text against a CRLF file and keeps CRLF', () => {
      expect(applyEdit('a\r\nb\r\nc\r\n', { old: 'a\nb', new: 'x\ny' }, P).content).toBe('x\r\ny\r\nc\r\n');
    });
    it('counts non-overlapping occurrences', () => {
      expect(() => applyEdit('aaa', { old: 'aa', new: 'b' }, P)).not.toThrow();
      expect(applyEdit('aaaa', { old: 'aa', new: 'b', replaceAll: true }, P).content).toBe('bb');
    });
  });

  describe('applyInsert', () => {
    const text = 'l1\nl2\nl3\n';
    it('inserts after (default) and before a line', () => {
      expect(applyInsert(text, { line: 2, content: 'new' }, P)).toEqual({
        content: 'l1\nl2\nnew\nl3\n',
        summary: 'Inserted 1 line after line 2 of /workspace/f.txt',
      });
      expect(applyInsert(text, { line: 1, content: 'a\nb\n', position: 'before' }, P).content).toBe(
        'a\nb\nl1\nl2\nl3\n',
      );
      expect(applyInsert(text, { line: 3, content: 'end' }, P).content).toBe('l1\nl2\nl3\nend\n');
    });
    it('adds the missing line break of the last line before appending after it', () => {
      expect(applyInsert('a\nb', { line: 2, content: 'c' }, P).content).toBe('a\nb\nc\n');
    });
    it('inserts into an empty file at line 1 (or 0)', () => {
      expect(applyInsert('', { line: 1, content: 'x' }, P).content).toBe('x\n');
      expect(applyInsert('', { line: 0, content: 'x' }, P).content).toBe('x\n');
      expect(() => applyInsert('', { line: 3, content: 'x' }, P)).toThrow(/is empty; use line 1/);
    });
    it('refuses lines out of range with the valid range', () => {
      expect(() => applyInsert(text, { line: 4, content: 'x' }, P)).toThrow(
        'insert_at_line: line 4 is out of range; /workspace/f.txt has 3 lines (1–3)',
      );
      expect(() => applyInsert(text, { line: 0, content: 'x' }, P)).toThrow(/out of range/);
    });
    it('keeps CRLF endings', () => {
      expect(applyInsert('a\r\nb\r\n', { line: 1, content: 'x\ny' }, P).content).toBe('a\r\nx\r\ny\r\nb\r\n');
    });
  });

  describe('applyReplaceLines', () => {
    const text = 'l1\nl2\nl3\nl4\n';
    it('replaces an inclusive range', () => {
      expect(applyReplaceLines(text, { fromLine: 2, toLine: 3, new: 'X' }, P)).toEqual({
        content: 'l1\nX\nl4\n',
        summary: 'Replaced lines 2–3 of /workspace/f.txt (2 lines removed, 1 added)',
      });
    });
    it('deletes lines with an empty new text', () => {
      expect(applyReplaceLines(text, { fromLine: 1, toLine: 4, new: '' }, P).content).toBe('');
      expect(applyReplaceLines(text, { fromLine: 4, toLine: 4, new: '' }, P).content).toBe('l1\nl2\nl3\n');
      expect(applyReplaceLines('a\nb\nc', { fromLine: 3, toLine: 3, new: '' }, P).content).toBe('a\nb');
    });
    it('keeps a missing final newline when replacing the last line', () => {
      expect(applyReplaceLines('a\nb', { fromLine: 2, toLine: 2, new: 'B' }, P).content).toBe('a\nB');
    });
    it('refuses bad ranges clearly', () => {
      expect(() => applyReplaceLines(text, { fromLine: 0, toLine: 1, new: '' }, P)).toThrow(
        /from_line 0 is out of range/,
      );
      expect(() => applyReplaceLines(text, { fromLine: 3, toLine: 2, new: '' }, P)).toThrow(
        'replace_lines: to_line 2 must be between from_line (3) and the last line (4) of /workspace/f.txt',
      );
      expect(() => applyReplaceLines(text, { fromLine: 1, toLine: 9, new: '' }, P)).toThrow(/to_line 9/);
      expect(() => applyReplaceLines('', { fromLine: 1, toLine: 1, new: 'x' }, P)).toThrow(/is empty/);
    });
  });

  describe('applyAppend', () => {
    it('appends, adding a line break when the file lacks one', () => {
      expect(applyAppend('a\n', { content: 'b\n' }, P)).toEqual({
        content: 'a\nb\n',
        summary: 'Appended 2 bytes to /workspace/f.txt',
      });
      expect(applyAppend('a', { content: 'b' }, P)).toEqual({
        content: 'a\nb',
        summary: 'Appended 1 byte to /workspace/f.txt (after adding a line break at the old end)',
      });
      expect(applyAppend('', { content: 'x' }, P).content).toBe('x');
    });
  });
});
