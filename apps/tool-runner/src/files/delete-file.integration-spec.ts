import { createHash, randomUUID } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, readlink, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { ExecuteCmdService } from '../command/execute-cmd.service';
import { PlainCommandRunner } from '../command/plain-command.runner';
import { ToolContext } from '../exec/tool-context';
import { ToolRouter } from '../exec/tool-router';
import { PreviewService } from '../preview/preview.service';
import { LandingService } from '../workspace/landing.service';
import { workspaceFixture, WorkspaceFixture, tp } from '../testing-fixtures/workspace-fixture';
import { ToolError } from '../tool-error';

/**
 * `delete_file`: deletes inside the workspace only — never the root, never a symlink's
 * target, never anything outside — and frees room in a workspace at or over its quota, after which
 * a command runs again.
 */
const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.log(`delete_file hostile paths: seed ${SEED} (FC_SEED=${SEED} replays)`);

describe('delete_file', () => {
  let fx: WorkspaceFixture;
  let runner: PlainCommandRunner;
  let router: ToolRouter;
  /** A directory beside the workspaces root: what no call may ever touch. */
  let outside: string;

  const setup = async (opts: { quota?: number; inodes?: number; usageTtlMs?: number } = {}): Promise<void> => {
    fx = await workspaceFixture(opts);
    runner = new PlainCommandRunner();
    const commands = new ExecuteCmdService({ SKALD_SANDBOX: 'none' }, fx.workspaces, runner, pino({ level: 'silent' }));
    router = new ToolRouter(fx.files, commands);
    outside = join(fx.base, 'outside');
    await mkdir(join(outside, 'dir'), { recursive: true });
    await writeFile(join(outside, 'victim.txt'), 'must survive');
    await writeFile(join(outside, 'dir', 'inner.txt'), 'must survive too');
  };
  afterEach(async () => {
    runner.onApplicationShutdown();
    await fx.cleanup();
  });

  const call = (name: string, args: Record<string, unknown>, over: Partial<ToolContext> = {}) =>
    router.route(name, fx.ctx(over), args);
  const del = (args: Record<string, unknown>, over: Partial<ToolContext> = {}) => call('delete_file', args, over);
  const failure = async (p: Promise<unknown>): Promise<ToolError> => {
    const e = await p.then(
      () => null,
      (err: unknown) => err,
    );
    if (!(e instanceof ToolError)) throw new Error(`expected a ToolError, got ${String(e)}`);
    return e;
  };
  const exists = (host: string) =>
    lstat(host).then(
      () => true,
      () => false,
    );
  const put = async (rel: string, content: string | Buffer = 'x'): Promise<void> => {
    await mkdir(join(fx.home, rel, '..'), { recursive: true });
    await writeFile(join(fx.home, rel), content);
  };
  /** Every path below `dir` with a digest of its content or link target: equal means untouched. */
  const snapshot = async (dir: string): Promise<string[]> => {
    const out: string[] = [];
    const walk = async (d: string, rel: string): Promise<void> => {
      for (const e of (await readdir(d, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
        const host = join(d, e.name);
        if (e.isSymbolicLink()) out.push(`${rel}${e.name} -> ${await readlink(host)}`);
        else if (e.isDirectory()) {
          out.push(`${rel}${e.name}/`);
          await walk(host, `${rel}${e.name}/`);
        } else
          out.push(
            `${rel}${e.name} ${createHash('sha256')
              .update(await readFile(host))
              .digest('hex')}`,
          );
      }
    };
    await walk(dir, '');
    return out;
  };

  describe('what it deletes', () => {
    beforeEach(() => setup());

    it('deletes a file, relative to the working directory, and says what it freed', async () => {
      await put('src/a.txt', 'hello');
      const out = await del({ path: 'a.txt' }, { workdir: '/workspace/src' });
      expect(out.result).toBe('Deleted /workspace/src/a.txt (5 B)');
      expect(out.fileChanged).toBeUndefined();
      expect(await exists(join(fx.home, 'src/a.txt'))).toBe(false);
      expect(await exists(join(fx.home, 'src'))).toBe(true);
    });

    it('deletes an empty directory; a directory with content only with recursive', async () => {
      await mkdir(join(fx.home, 'empty'));
      await put('full/a/b/c.txt', 'abc');
      await put('full/d.txt', 'd');
      expect((await del({ path: 'empty' })).result).toBe('Deleted the empty directory /workspace/empty');
      const e = await failure(del({ path: 'full' }));
      expect(e.message).toBe(
        '/workspace/full is a directory that is not empty; call delete_file with recursive=true to delete it and everything in it',
      );
      expect(await exists(join(fx.home, 'full/a/b/c.txt'))).toBe(true);
      expect((await del({ path: 'full', recursive: true })).result).toBe(
        'Deleted the directory /workspace/full and everything in it (5 entries, 4 B)',
      );
      expect(await readdir(fx.home)).toEqual([]);
    });

    it('deletes a symlink itself, never its target, inside or outside the workspace', async () => {
      await put('keep/target.txt', 'kept');
      await symlink(join(fx.home, 'keep/target.txt'), join(fx.home, 'in-link'));
      await symlink(join(fx.home, 'keep'), join(fx.home, 'dir-link'));
      await symlink(join(outside, 'victim.txt'), join(fx.home, 'out-link'));
      await symlink(join(outside, 'dir'), join(fx.home, 'out-dir-link'));
      await symlink(join(fx.home, 'nowhere'), join(fx.home, 'dangling'));
      for (const l of ['in-link', 'dir-link', 'out-link', 'out-dir-link', 'dangling']) {
        expect((await del({ path: l, recursive: true })).result).toBe(
          `Deleted the symlink /workspace/${l} (what it pointed to is untouched)`,
        );
      }
      expect(await readdir(fx.home)).toEqual(['keep']);
      expect(await readFile(join(fx.home, 'keep/target.txt'), 'utf8')).toBe('kept');
      expect(await snapshot(outside)).toEqual([
        'dir/',
        `dir/inner.txt ${createHash('sha256').update('must survive too').digest('hex')}`,
        `victim.txt ${createHash('sha256').update('must survive').digest('hex')}`,
      ]);
    });

    it('a recursive delete removes the symlinks below, not what they point to', async () => {
      await put('tree/a.txt', 'a');
      await symlink(join(outside, 'dir'), join(fx.home, 'tree/out'));
      await symlink(join(outside, 'victim.txt'), join(fx.home, 'tree/victim'));
      const before = await snapshot(outside);
      await del({ path: 'tree', recursive: true });
      expect(await exists(join(fx.home, 'tree'))).toBe(false);
      expect(await snapshot(outside)).toEqual(before);
    });

    it('follows a symlinked directory inside the workspace on the way to the entry', async () => {
      await put('real/a.txt', 'a');
      await symlink(join(fx.home, 'real'), join(fx.home, 'alias'));
      expect((await del({ path: 'alias/a.txt' })).result).toBe('Deleted /workspace/alias/a.txt (1 B)');
      expect(await readdir(join(fx.home, 'real'))).toEqual([]);
    });

    it('a recursive removal stops at its entry bound, and the next call goes on', async () => {
      for (let i = 0; i < 7; i++) await put(`tree/d${i % 2}/f${i}`, 'x');
      const jail = await fx.workspaces.jail(fx.userId);
      const p = { virtual: '/workspace/tree', segments: ['tree'] };
      const first = await jail.remove(p, { recursive: true, maxEntries: 4 });
      expect(first).toMatchObject({ complete: false, inodes: 4 });
      expect(await exists(join(fx.home, 'tree'))).toBe(true);
      const rest = await jail.remove(p, { recursive: true, maxEntries: 100 });
      expect(rest).toMatchObject({ complete: true, inodes: 6, kind: 'directory' }); // 3 files, 2 dirs, tree
      expect(await readdir(fx.home)).toEqual([]);
    });

    it('never deletes the workspace root', async () => {
      await put('a.txt');
      for (const path of ['.', '/workspace', '/workspace/', 'a/..', './', 'x/../.']) {
        const e = await failure(del({ path, recursive: true }));
        expect([path, e.code, e.message]).toEqual([path, 'forbidden', 'the workspace root itself cannot be deleted']);
      }
      expect(await readdir(fx.home)).toEqual(['a.txt']);
    });

    it('refuses paths outside the workspace, through an escaping symlink, with a NUL byte', async () => {
      await symlink(outside, join(fx.home, 'out'));
      const before = await snapshot(outside);
      const cases: Array<[string, string]> = [
        ['../outside/victim.txt', 'outside_workspace'],
        ['/etc/hostname', 'outside_workspace'],
        ['/workspace/../outside', 'outside_workspace'],
        ['out/victim.txt', 'outside_workspace'],
        ['out/dir', 'outside_workspace'],
        ['a\0b', 'invalid_argument'],
      ];
      for (const [path, code] of cases) {
        const e = await failure(del({ path, recursive: true }));
        expect([path, e.code]).toEqual([path, code]);
      }
      expect(await snapshot(outside)).toEqual(before);
    });

    it('refuses memory documents with a sentence saying what to do instead', async () => {
      for (const path of ['user-memory/notes.md', 'shared-memory/team.md', './user-memory/x.md']) {
        const e = await failure(del({ path }));
        expect([path, e.message]).toEqual([
          path,
          'delete_file deletes workspace files; memory documents are not deleted by it (they do not count against the workspace quota): overwrite the document with write_file instead',
        ]);
      }
      // A memory path the resolver refuses is refused as such.
      expect((await failure(del({ path: 'user-memory/../../x' }))).code).not.toBe('forbidden');
    });

    it('a missing path is not found', async () => {
      const e = await failure(del({ path: 'nope/x.txt' }));
      expect(e.code).toBe('not_found');
    });

    it('honours the judged landing: a symlink changed since the gate judged it deletes nothing', async () => {
      await put('real/a.txt', 'a');
      await put('other/a.txt', 'b');
      await symlink(join(fx.home, 'real'), join(fx.home, 'alias'));
      // Judged while alias led to real/; now it leads to other/.
      await rm(join(fx.home, 'alias'));
      await symlink(join(fx.home, 'other'), join(fx.home, 'alias'));
      const e = await failure(del({ path: tp('alias/a.txt') }, { judgedLanding: { path: '/workspace/real/a.txt' } }));
      expect(e.message).toBe(
        '/workspace/alias/a.txt no longer leads to /workspace/real/a.txt, where the approval gate judged it (a symlink changed since the check): nothing was deleted',
      );
      expect(await readFile(join(fx.home, 'other/a.txt'), 'utf8')).toBe('b');
      expect(await readFile(join(fx.home, 'real/a.txt'), 'utf8')).toBe('a');
      // Where it was judged to land, it deletes.
      await del({ path: tp('alias/a.txt') }, { judgedLanding: { path: '/workspace/other/a.txt' } });
      expect(await exists(join(fx.home, 'other/a.txt'))).toBe(false);
    });

    it('a symlink swapped for a directory (and back) under a recursive delete never reaches outside', async () => {
      const before = await snapshot(outside);
      const sw = join(fx.home, 'sw');
      let stop = false;
      const flipper = (async () => {
        let i = 0;
        while (!stop && i < 2000) {
          i++;
          await rm(sw, { recursive: true, force: true }).catch(() => undefined);
          if (i % 2 === 0) await symlink(join(outside, 'dir'), sw).catch(() => undefined);
          else {
            await mkdir(join(fx.home, 'tmp'), { recursive: true }).catch(() => undefined);
            await mkdir(join(fx.home, 'tmp', 'd')).catch(() => undefined);
            await writeFile(join(fx.home, 'tmp', 'd', 'f'), 'f').catch(() => undefined);
            await rename(join(fx.home, 'tmp', 'd'), sw).catch(() => undefined);
          }
        }
      })();
      for (let k = 0; k < 150; k++) {
        await del({ path: k % 3 === 0 ? 'sw/f' : 'sw', recursive: k % 2 === 0 }).catch((e: unknown) => {
          if (!(e instanceof ToolError)) throw e;
        });
      }
      stop = true;
      await flipper;
      expect(await snapshot(outside)).toEqual(before);
      expect((await stat(fx.home)).isDirectory()).toBe(true);
    });
  });

  describe('what the gate is told (tools.resolve, tools.preview)', () => {
    beforeEach(() => setup());
    const req = (path: string) => ({
      actor: { userId: fx.userId, role: 'user' as const },
      session_id: randomUUID(),
      tool_call_id: randomUUID(),
      name: 'delete_file',
      arguments: { path },
      working_directory: null,
    });

    it('a delete lands on the entry its path names: a final symlink is not followed, a directory on the way is', async () => {
      await put('keep/target.txt', 'kept');
      await symlink(join(fx.home, 'keep/target.txt'), join(fx.home, 'link'));
      await symlink(join(fx.home, 'keep'), join(fx.home, 'alias'));
      const landing = new LandingService(fx.workspaces);
      expect(await landing.resolve(req('link'))).toEqual({ landing: ['/workspace/link'] });
      expect(await landing.resolve(req('alias'))).toEqual({ landing: ['/workspace/alias'] });
      expect(await landing.resolve(req('alias/target.txt'))).toEqual({ landing: ['/workspace/keep/target.txt'] });
      // A write through the same link lands on its target (what write_file would change).
      expect(await landing.resolve({ ...req('link'), name: 'write_file' })).toEqual({
        landing: ['/workspace/keep/target.txt'],
      });
    });

    it('has no content preview; a path whose directory is reached outside the workspace is refused up front', async () => {
      await put('a.txt', 'a');
      await symlink(outside, join(fx.home, 'out'));
      await symlink(join(outside, 'victim.txt'), join(fx.home, 'out-link'));
      const previews = new PreviewService(fx.workspaces);
      expect(await previews.reply(req('a.txt'))).toEqual({ preview: null });
      // The link itself is deleted, so it may be asked about.
      expect(await previews.reply(req('out-link'))).toEqual({ preview: null });
      expect(await previews.reply(req('out/victim.txt'))).toEqual({
        preview: null,
        refused: '/workspace/out/victim.txt resolves outside the workspace (through a symlink); access refused',
      });
    });
  });

  describe('generated hostile paths (fast-check)', () => {
    beforeEach(() => setup());

    /** A workspace with files, symlinks in and out, and memory-named directories; reset each run. */
    const build = async (): Promise<void> => {
      await rm(fx.home, { recursive: true, force: true });
      await mkdir(fx.home, { recursive: true });
      await put('a/b/file.txt', 'f');
      await put('a/x.txt', 'x');
      await put('user-memory/local.txt', 'not memory: a workspace directory reached absolutely');
      await symlink(join(outside, 'dir'), join(fx.home, 'a/out'));
      await symlink(join(outside, 'victim.txt'), join(fx.home, 'victim.txt'));
      await symlink(join(fx.home, 'a/b'), join(fx.home, 'in'));
      await symlink('../..', join(fx.home, 'a/up'));
      await symlink(join(fx.base), join(fx.home, 'base'));
    };

    it('deletes nothing outside the workspace and never the root, whatever the path', async () => {
      const before = await snapshot(outside);
      const segment = fc.constantFrom(
        'a',
        'b',
        'file.txt',
        'x.txt',
        'out',
        'in',
        'up',
        'base',
        'outside',
        'victim.txt',
        'dir',
        'inner.txt',
        '.',
        '..',
        '',
        'user-memory',
        'shared-memory',
        'ws',
        '\0',
        'nul\0x',
      );
      const generated = fc
        .tuple(fc.array(segment, { minLength: 0, maxLength: 6 }), fc.constantFrom('', '/workspace/', '/', './'))
        .map(([segs, prefix]) => prefix + segs.join('/'));
      // Paths that exist, so that a share of the calls delete something.
      const existing = fc.constantFrom(
        '/workspace/a',
        '/workspace/a/x.txt',
        '/workspace/a/b',
        '/workspace/in',
        '/workspace/in/file.txt',
        '/workspace/victim.txt',
        '/workspace/a/out',
        '/workspace/a/up',
        '/workspace/base',
        '/workspace/user-memory/local.txt',
      );
      const pathArb = fc.oneof(generated, existing);
      let ran = 0;
      await fc.assert(
        fc.asyncProperty(
          pathArb,
          fc.boolean(),
          fc.constantFrom('/workspace', '/workspace/a'),
          async (path, rec, wd) => {
            await build();
            await del({ path, recursive: rec }, { workdir: wd }).then(
              () => ran++,
              (e: unknown) => {
                if (!(e instanceof ToolError)) throw e;
              },
            );
            expect(await snapshot(outside)).toEqual(before);
            expect((await lstat(fx.home)).isDirectory()).toBe(true);
            expect(await readdir(fx.base).then((d) => d.sort())).toEqual(['outside', 'ws']);
          },
        ),
        { seed: SEED, numRuns: 300 },
      );
      // Not a test of errors only: generated calls did delete.
      expect(ran).toBeGreaterThan(10);
    }, 120_000);
  });

  describe('at the quota', () => {
    const cmd = (command: string) => call('execute_cmd', { command });

    it('over its byte quota: execute_cmd refuses, delete_file frees the bytes, a command runs again', async () => {
      // The usage is cached (as in production): only delete_file's credit lets the command run.
      await setup({ quota: 64 * 1024, usageTtlMs: 60_000 });
      await put('big.bin', Buffer.alloc(80 * 1024));
      await put('small.txt', 'ok');
      const refused = await failure(cmd('echo ran'));
      expect(refused.code).toBe('quota_exceeded');
      expect(refused.message).toContain('the command was not run');
      // A write is refused too.
      expect((await failure(call('write_file', { path: 'n.txt', content: 'x' }))).code).toBe('quota_exceeded');
      expect((await del({ path: 'big.bin' })).result).toBe('Deleted /workspace/big.bin (80 KiB)');
      expect((await cmd('echo ran')).result).toContain('ran');
    });

    it('over its inode quota: execute_cmd refuses, delete_file frees entries, a command runs again', async () => {
      await setup({ inodes: 20, usageTtlMs: 60_000 });
      for (let i = 0; i < 24; i++) await put(`many/f${i}.txt`, 'x');
      const refused = await failure(cmd('echo ran'));
      expect(refused.code).toBe('quota_exceeded');
      expect((await del({ path: 'many', recursive: true })).result).toBe(
        'Deleted the directory /workspace/many and everything in it (25 entries, 24 B)',
      );
      expect((await cmd('echo ran')).result).toContain('ran');
    });

    it('exactly at its inode quota: deleting one file is enough for a command to run', async () => {
      await setup({ inodes: 5, usageTtlMs: 60_000 });
      for (let i = 0; i < 5; i++) await put(`f${i}`, 'x');
      expect((await failure(cmd('echo ran'))).code).toBe('quota_exceeded');
      await del({ path: 'f0' });
      expect((await cmd('echo ran')).result).toContain('ran');
    });
  });
});
