import { RE2_SYNTAX_NOTE } from '@skald/contracts';
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ToolCancelled } from '../exec/tool-context';
import { workspaceFixture, WorkspaceFixture, tp } from '../testing-fixtures/workspace-fixture';
import { ToolError } from '../tool-error';
import { FILE_LIMITS } from './file-limits.constants';
import { GrepFilesArgs, ListFilesArgs, parseArgs, ReadFileArgs } from './file-tool-args';

describe('FileToolsService', () => {
  let fx: WorkspaceFixture;
  beforeEach(async () => {
    fx = await workspaceFixture();
  });
  afterEach(() => fx.cleanup());

  const put = async (rel: string, content: string | Buffer): Promise<void> => {
    await mkdir(join(fx.home, rel, '..'), { recursive: true });
    await writeFile(join(fx.home, rel), content);
  };
  const host = (rel: string): Promise<string> => readFile(join(fx.home, rel), 'utf8');
  const error = async (p: Promise<unknown>): Promise<ToolError> => {
    const e = await p.then(
      () => null,
      (err: unknown) => err,
    );
    if (!(e instanceof ToolError)) throw new Error(`expected a ToolError, got ${String(e)}`);
    return e;
  };
  const read = async (args: Record<string, unknown>, workdir = '/workspace') =>
    fx.files.readFile(fx.ctx({ workdir }), parseArgs('read_file', ReadFileArgs, args));
  const list = async (args: Record<string, unknown>) =>
    fx.files.listFiles(fx.ctx(), parseArgs('list_files', ListFilesArgs, args));
  const grep = async (args: Record<string, unknown>) =>
    fx.files.grepFiles(fx.ctx(), parseArgs('grep_files', GrepFilesArgs, args));

  describe('read_file', () => {
    beforeEach(() => put('src/a.txt', 'one\ntwo\nthree\nfour\n'));

    it('numbers lines like cat -n, relative to the working directory', async () => {
      expect((await read({ path: 'a.txt' }, '/workspace/src')).result).toBe(
        '     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour',
      );
      expect((await read({ path: '/workspace/src/a.txt' })).result).toContain('     4\tfour');
    });
    it('reads a range and says how to continue', async () => {
      expect((await read({ path: 'src/a.txt', start_line: 2, end_line: 3 })).result).toBe(
        '     2\ttwo\n     3\tthree\n[lines 2–3 of 4; call read_file with start_line=4 to read more]',
      );
      expect((await read({ path: 'src/a.txt', start_line: '3', limit: 5 })).result).toBe(
        '     3\tthree\n     4\tfour\n[lines 3–4 of 4]',
      );
      expect((await read({ path: 'src/a.txt', limit: 1 })).result).toContain('start_line=2');
    });
    it('refuses out-of-range and bad arguments clearly', async () => {
      expect((await error(read({ path: 'src/a.txt', start_line: 9 }))).message).toBe(
        'read_file: start_line 9 is past the end of /workspace/src/a.txt (4 lines)',
      );
      expect((await error(read({ path: 'src/a.txt', start_line: 3, end_line: 2 }))).message).toMatch(
        /end_line 2 is before start_line 3/,
      );
      expect((await error(read({}))).message).toMatch(/^read_file: invalid arguments: path/);
      expect((await error(read({ path: 'src/a.txt', start_line: 0 }))).message).toMatch(/start_line/);
    });
    it('names missing files and directories', async () => {
      expect((await error(read({ path: 'nope.txt' }))).message).toBe('no such file or directory: /workspace/nope.txt');
      expect((await error(read({ path: 'src' }))).message).toBe('/workspace/src is a directory, not a file');
    });
    it('refuses binary files', async () => {
      await put('img.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 1, 2]));
      const e = await error(read({ path: 'img.png' }));
      expect(e.code).toBe('binary');
      expect(e.message).toBe('read_file: /workspace/img.png is a binary file (8 B); only text files can be read');
    });
    it('refuses files over the size cap', async () => {
      await put('big.txt', Buffer.alloc(FILE_LIMITS.readMaxBytes + 1024 * 1024, 'a'));
      const e = await error(read({ path: 'big.txt' }));
      expect(e.code).toBe('too_large');
      expect(e.message).toMatch(
        /^read_file: \/workspace\/big.txt is too large \(11 MiB; the limit is 10 MiB\)\. Use grep_files/,
      );
    });
    it('says when a file is empty', async () => {
      await put('empty', '');
      expect((await read({ path: 'empty' })).result).toBe('(/workspace/empty is empty)');
    });
    it('never treats a memory path as a workspace file', async () => {
      const e = await error(read({ path: 'user-memory/notes.md' }));
      expect(e.message).toBe('user-memory/notes.md is a memory document, not a workspace file');
    });
  });

  describe('write tools', () => {
    it('write_file creates parents, overwrites and reports file_changed', async () => {
      const created = await fx.files.writeFile(fx.ctx(), { path: tp('deep/new/f.txt'), content: 'hello\n' });
      expect(created).toEqual({
        result: 'Created /workspace/deep/new/f.txt (6 bytes)',
        fileChanged: '/workspace/deep/new/f.txt',
      });
      expect(await host('deep/new/f.txt')).toBe('hello\n');
      const over = await fx.files.writeFile(fx.ctx({ workdir: '/workspace/deep' }), {
        path: tp('new/f.txt'),
        content: 'hi',
      });
      expect(over.result).toBe('Overwrote /workspace/deep/new/f.txt (2 bytes)');
      expect(await host('deep/new/f.txt')).toBe('hi');
    });
    it('write_file refuses a directory', async () => {
      await mkdir(join(fx.home, 'd'));
      expect((await error(fx.files.writeFile(fx.ctx(), { path: tp('d'), content: 'x' }))).message).toBe(
        '/workspace/d is a directory, not a file',
      );
    });
    it('edit_file edits in place and explains failures', async () => {
      await put('e.txt', 'alpha\nbeta\nalpha\n');
      expect(
        (await fx.files.editFile(fx.ctx(), { path: tp('e.txt'), old: 'beta', new: 'BETA', replace_all: false }))
          .fileChanged,
      ).toBe('/workspace/e.txt');
      expect(await host('e.txt')).toBe('alpha\nBETA\nalpha\n');
      expect(
        (await error(fx.files.editFile(fx.ctx(), { path: tp('e.txt'), old: 'alpha', new: 'x', replace_all: false })))
          .message,
      ).toMatch(/occurs 2 times .* \(at lines 1, 3\)/);
      expect(
        (await error(fx.files.editFile(fx.ctx(), { path: tp('e.txt'), old: 'gamma', new: 'x', replace_all: false })))
          .message,
      ).toMatch(/was not found in \/workspace\/e.txt/);
      await fx.files.editFile(fx.ctx(), { path: tp('e.txt'), old: 'alpha', new: 'A', replace_all: true });
      expect(await host('e.txt')).toBe('A\nBETA\nA\n');
    });
    it('edit tools do not create missing files', async () => {
      expect(
        (await error(fx.files.editFile(fx.ctx(), { path: tp('missing.txt'), old: 'a', new: 'b', replace_all: false })))
          .message,
      ).toBe('no such file or directory: /workspace/missing.txt');
      await expect(stat(join(fx.home, 'missing.txt'))).rejects.toThrow(/ENOENT/);
      expect(
        (await error(fx.files.replaceLines(fx.ctx(), { path: tp('no/dir/x'), from_line: 1, to_line: 1, new: '' })))
          .code,
      ).toBe('not_found');
      await expect(stat(join(fx.home, 'no'))).rejects.toThrow(/ENOENT/);
    });
    it('edit tools refuse binary files', async () => {
      await put('b.bin', Buffer.from([1, 0, 2]));
      expect((await error(fx.files.appendFile(fx.ctx(), { path: tp('b.bin'), content: 'x' }))).code).toBe('binary');
    });
    it('insert_at_line, replace_lines and append_file change the file', async () => {
      await put('l.txt', 'a\nb\nc\n');
      await fx.files.insertAtLine(fx.ctx(), { path: tp('l.txt'), line: 1, content: 'A', position: 'after' });
      expect(await host('l.txt')).toBe('a\nA\nb\nc\n');
      await fx.files.replaceLines(fx.ctx(), { path: tp('l.txt'), from_line: 3, to_line: 4, new: 'BC' });
      expect(await host('l.txt')).toBe('a\nA\nBC\n');
      const out = await fx.files.appendFile(fx.ctx(), { path: tp('l.txt'), content: 'z\n' });
      expect(out).toEqual({ result: 'Appended 2 bytes to /workspace/l.txt', fileChanged: '/workspace/l.txt' });
      expect(await host('l.txt')).toBe('a\nA\nBC\nz\n');
      expect(
        (
          await error(
            fx.files.insertAtLine(fx.ctx(), { path: tp('l.txt'), line: 10, content: 'x', position: 'before' }),
          )
        ).message,
      ).toBe('insert_at_line: line 10 is out of range; /workspace/l.txt has 4 lines (1–4)');
    });
    it('append_file creates a missing file', async () => {
      await fx.files.appendFile(fx.ctx(), { path: tp('log/new.log'), content: 'first\n' });
      expect(await host('log/new.log')).toBe('first\n');
    });
    it('a write cancelled before it takes effect changes nothing', async () => {
      await put('c.txt', 'keep');
      const controller = new AbortController();
      controller.abort();
      await expect(
        fx.files.writeFile(fx.ctx({ signal: controller.signal }), { path: tp('c.txt'), content: 'lost' }),
      ).rejects.toBeInstanceOf(ToolCancelled);
      expect(await host('c.txt')).toBe('keep');
      await expect(
        fx.files.writeFile(fx.ctx({ signal: controller.signal }), { path: tp('fresh.txt'), content: 'x' }),
      ).rejects.toBeInstanceOf(ToolCancelled);
      await expect(stat(join(fx.home, 'fresh.txt'))).rejects.toThrow(/ENOENT/);
    });
  });

  describe('quota', () => {
    let small: WorkspaceFixture;
    beforeEach(async () => {
      small = await workspaceFixture({ quota: 100 });
    });
    afterEach(() => small.cleanup());

    it('refuses a write that would pass the quota, with a clear error, and leaves no file behind', async () => {
      await small.files.writeFile(small.ctx(), { path: tp('a.txt'), content: 'x'.repeat(60) });
      const e = await error(small.files.writeFile(small.ctx(), { path: tp('b.txt'), content: 'y'.repeat(50) }));
      expect(e.code).toBe('quota_exceeded');
      expect(e.message).toBe(
        'workspace quota exceeded: writing /workspace/b.txt needs 50 B more, but the workspace uses 60 B of its 100 B quota. Delete files to make room.',
      );
      await expect(stat(join(small.home, 'b.txt'))).rejects.toThrow(/ENOENT/);
      expect(
        (await error(small.files.appendFile(small.ctx(), { path: tp('a.txt'), content: 'z'.repeat(41) }))).code,
      ).toBe('quota_exceeded');
    });
    it('counts the growth only: overwriting or shrinking within the quota is allowed', async () => {
      await small.files.writeFile(small.ctx(), { path: tp('a.txt'), content: 'x'.repeat(90) });
      await small.files.writeFile(small.ctx(), { path: tp('a.txt'), content: 'y'.repeat(100) });
      await small.files.editFile(small.ctx(), {
        path: tp('a.txt'),
        old: 'y'.repeat(100),
        new: 'short',
        replace_all: false,
      });
      expect(await readFile(join(small.home, 'a.txt'), 'utf8')).toBe('short');
    });
    it('counts files written by other means (commands) on the next measurement', async () => {
      await writeFile(join(small.home, 'by-command.bin'), Buffer.alloc(95));
      expect(
        (await error(small.files.writeFile(small.ctx(), { path: tp('n.txt'), content: 'x'.repeat(10) }))).code,
      ).toBe('quota_exceeded');
    });
    it('serialises concurrent writes of one workspace so both cannot pass the check', async () => {
      const results = await Promise.allSettled([
        small.files.writeFile(small.ctx(), { path: tp('p.txt'), content: 'x'.repeat(60) }),
        small.files.writeFile(small.ctx(), { path: tp('q.txt'), content: 'x'.repeat(60) }),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    });
  });

  describe('inode quota', () => {
    let small: WorkspaceFixture;
    beforeEach(async () => {
      small = await workspaceFixture({ inodes: 5 });
    });
    afterEach(() => small.cleanup());

    it('counts new files and the directories a write creates, refuses the one past the quota and leaves nothing behind', async () => {
      // a/ and a/b/ and a/b/one.txt: 3 entries.
      await small.files.writeFile(small.ctx(), { path: tp('a/b/one.txt'), content: '' });
      await small.files.writeFile(small.ctx(), { path: tp('two.txt'), content: '' });
      // c/ would be the 5th, c/d/ the 6th: refused before anything is made.
      const e = await error(small.files.writeFile(small.ctx(), { path: tp('c/d/three.txt'), content: 'x' }));
      expect(e.code).toBe('quota_exceeded');
      expect(e.message).toBe(
        'workspace quota exceeded: writing /workspace/c/d/three.txt creates new files or directories, but the workspace holds 4 of its 5 files and directories. Delete files to make room.',
      );
      await expect(stat(join(small.home, 'c'))).rejects.toThrow(/ENOENT/);
      // The 5th entry fits; then nothing new, but existing files can still be rewritten and appended to.
      await small.files.writeFile(small.ctx(), { path: tp('three.txt'), content: '' });
      expect((await error(small.files.writeFile(small.ctx(), { path: tp('four.txt'), content: '' }))).code).toBe(
        'quota_exceeded',
      );
      await expect(stat(join(small.home, 'four.txt'))).rejects.toThrow(/ENOENT/);
      await small.files.writeFile(small.ctx(), { path: tp('two.txt'), content: 'rewritten' });
      await small.files.appendFile(small.ctx(), { path: tp('a/b/one.txt'), content: 'more' });
      expect(await readFile(join(small.home, 'two.txt'), 'utf8')).toBe('rewritten');
    });
    it('counts entries made by other means (commands): empty files, directories, symlinks', async () => {
      await mkdir(join(small.home, 'd1/d2'), { recursive: true });
      await writeFile(join(small.home, 'empty'), '');
      await symlink('/nowhere', join(small.home, 'link'));
      await writeFile(join(small.home, 'fifth'), '');
      expect((await error(small.files.writeFile(small.ctx(), { path: tp('x'), content: '' }))).message).toContain(
        'holds 5 of its 5 files and directories',
      );
    });
  });

  describe('list_files', () => {
    beforeEach(async () => {
      await put('src/a.ts', 'a');
      await put('src/lib/b.ts', 'bb');
      await put('src/lib/deep/c.ts', 'c');
      await put('README.md', 'r');
      await put('node_modules/x/index.js', 'x');
    });
    it('lists to a depth, directories with a slash, big folders not expanded', async () => {
      expect((await list({ depth: 2 })).result).toBe(
        [
          'Contents of /workspace/ (depth 2):',
          'README.md',
          'node_modules/ (not expanded)',
          'src/',
          'src/a.ts',
          'src/lib/',
        ].join('\n'),
      );
      expect((await list({ path: 'src/lib' })).result).toBe(
        ['Contents of /workspace/src/lib/ (depth 3):', 'b.ts', 'deep/', 'deep/c.ts'].join('\n'),
      );
    });
    it('lists directories only, and details', async () => {
      expect((await list({ path: 'src', dirs_only: true })).result).toBe(
        ['Directories of /workspace/src/ (depth 3):', 'lib/', 'lib/deep/'].join('\n'),
      );
      expect((await list({ path: 'src/lib', depth: 1, detailed: true })).result).toMatch(
        /^\s+2 {2}\d{4}-\d\d-\d\d \d\d:\d\d {2}b\.ts$/m,
      );
    });
    it('says when a directory is empty or is not one', async () => {
      await mkdir(join(fx.home, 'empty'));
      expect((await list({ path: 'empty' })).result).toBe('Contents of /workspace/empty/ (depth 3):\n(empty)');
      expect((await error(list({ path: 'README.md' }))).message).toBe('/workspace/README.md is not a directory');
    });
  });

  describe('search_file', () => {
    it('finds case-insensitive literal matches with context', async () => {
      await put('s.txt', 'one\nTwo (x)\nthree\nfour\nfive two\n');
      expect(
        (await fx.files.searchFile(fx.ctx(), { path: tp('s.txt'), query: 'two (x', context_lines: 1 })).result,
      ).toBe('1 match for "two (x" in /workspace/s.txt:\n     1- one\n     2: Two (x)\n     3- three');
      expect((await fx.files.searchFile(fx.ctx(), { path: tp('s.txt'), query: 'two', context_lines: 0 })).result).toBe(
        '2 matches for "two" in /workspace/s.txt:\n     2: Two (x)\n--\n     5: five two',
      );
      expect((await fx.files.searchFile(fx.ctx(), { path: tp('s.txt'), query: 'zzz', context_lines: 0 })).result).toBe(
        'No matches for "zzz" in /workspace/s.txt',
      );
    });
  });

  describe('grep_files', () => {
    beforeEach(async () => {
      await put('src/a.ts', 'import x\nconst Foo = 1;\n');
      await put('src/b.js', 'foo()\nbar()\n');
      await put('docs/readme.md', 'about foo\n');
      await put('bin/blob', Buffer.from([0, 1, 2, 3]));
      await put('.git/config', 'foo');
    });
    it('shows matching lines with paths (case-sensitive by default, as the model is told), skipping .git and binaries', async () => {
      expect((await grep({ pattern: 'foo' })).result).toBe(
        ['/workspace/docs/readme.md:1:about foo', '--', '/workspace/src/b.js:1:foo()', '[1 binary file skipped]'].join(
          '\n',
        ),
      );
    });
    it('honours case_sensitive, glob, files_only and count', async () => {
      expect((await grep({ pattern: 'Foo', case_sensitive: false, output_mode: 'files_only' })).result).toBe(
        '/workspace/docs/readme.md\n/workspace/src/a.ts\n/workspace/src/b.js\n[1 binary file skipped]',
      );
      expect((await grep({ pattern: 'Foo', output_mode: 'files_only' })).result).toBe(
        '/workspace/src/a.ts\n[1 binary file skipped]',
      );
      expect((await grep({ pattern: 'foo', glob: '*.{ts,js}', output_mode: 'count', path: 'src' })).result).toBe(
        '/workspace/src/b.js: 1',
      );
      expect((await grep({ pattern: 'o', glob: 'src/**/*.ts', output_mode: 'files_only' })).result).toBe(
        '/workspace/src/a.ts',
      );
    });
    it('pages with limit and offset and shows context', async () => {
      const first = await grep({ pattern: 'foo', path: 'src', limit: 1, case_sensitive: false });
      expect(first.result).toBe('/workspace/src/a.ts:2:const Foo = 1;\n[matches 1–1 of 2; use offset=1 for more]');
      const second = await grep({
        pattern: 'foo',
        path: 'src',
        limit: 1,
        offset: 1,
        context_lines: 1,
        case_sensitive: false,
      });
      expect(second.result).toBe('/workspace/src/b.js:1:foo()\n/workspace/src/b.js-2-bar()\n[matches 2–2 of 2]');
    });
    it('greps a single file, and says when nothing matches', async () => {
      expect((await grep({ pattern: '^bar', path: 'src/b.js' })).result).toBe('/workspace/src/b.js:2:bar()');
      expect((await grep({ pattern: 'nothing-here', path: 'src' })).result).toBe(
        'No matches for /nothing-here/ in /workspace/src',
      );
    });
    it('refuses invalid regular expressions, syntax outside RE2, bad globs and out-of-range context', async () => {
      expect((await error(grep({ pattern: '(' }))).message).toBe(
        `grep_files: unsupported or invalid regular expression /(/: error parsing regexp: missing closing ): \`(\`. ${RE2_SYNTAX_NOTE}`,
      );
      expect((await error(grep({ pattern: '(a)\\1' }))).message).toMatch(
        /invalid escape sequence: `\\1`.*backreferences/,
      );
      expect((await error(grep({ pattern: 'a', glob: '[z-a]' }))).message).toBe(
        'grep_files: invalid glob [z-a]: error parsing regexp: invalid character class range: `z-a`',
      );
      expect((await error(grep({ pattern: 'a', context_lines: 11 }))).message).toMatch(/context_lines/);
    });
    it('answers a backtracking-hostile pattern at once (RE2 is linear)', async () => {
      await put('redos.txt', `${'a'.repeat(40_000)}!\n`);
      const t0 = performance.now();
      expect(await grep({ pattern: '^(a+)+$', path: 'redos.txt' })).toEqual({
        result: 'No matches for /^(a+)+$/ in /workspace/redos.txt',
      });
      expect(performance.now() - t0).toBeLessThan(1000);
    });
  });
});
