import { randomUUID } from 'node:crypto';
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { workspaceFixture, WorkspaceFixture, tp } from '../testing-fixtures/workspace-fixture';
import { ToolError } from '../tool-error';
import { resolveWorkspacePath } from './workspace-path';

describe('Jail: file tools stay inside the user workspace', () => {
  let fx: WorkspaceFixture;
  let outside: string;

  beforeEach(async () => {
    fx = await workspaceFixture();
    outside = join(fx.base, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'secret.txt'), 'host secret\n');
  });
  afterEach(() => fx.cleanup());

  async function refused(p: Promise<unknown>): Promise<ToolError> {
    const e = await p.then(
      () => null,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ToolError);
    return e as ToolError;
  }

  it('creates the workspace with mode 0700 on first use', async () => {
    expect((await stat(fx.home)).mode & 0o777).toBe(0o700);
  });

  it('refuses to read through a symlink pointing out of the workspace (file tool)', async () => {
    await symlink(join(outside, 'secret.txt'), join(fx.home, 'link.txt'));
    const e = await refused(fx.files.readFile(fx.ctx(), { path: tp('link.txt') }));
    expect(e.code).toBe('outside_workspace');
    expect(e.message).toBe('/workspace/link.txt resolves outside the workspace (through a symlink); access refused');
    expect(e.message).not.toContain(fx.base);
  });

  it('refuses to write through a symlink pointing out, and the target is unchanged', async () => {
    await symlink(join(outside, 'secret.txt'), join(fx.home, 'link.txt'));
    const e = await refused(fx.files.writeFile(fx.ctx(), { path: tp('link.txt'), content: 'pwned' }));
    expect(e.code).toBe('outside_workspace');
    expect(await readFile(join(outside, 'secret.txt'), 'utf8')).toBe('host secret\n');
  });

  it('refuses a dangling symlink pointing out (no file is created outside)', async () => {
    await symlink(join(outside, 'new.txt'), join(fx.home, 'dangling'));
    const e = await refused(fx.files.writeFile(fx.ctx(), { path: tp('dangling'), content: 'x' }));
    expect(e.code).toBe('outside_workspace');
    expect(e.message).toBe('/workspace/dangling resolves outside the workspace (through a symlink); access refused');
    await expect(stat(join(outside, 'new.txt'))).rejects.toThrow(/ENOENT/);
  });

  it('refuses a symlinked directory in the middle of a path, for reads and writes', async () => {
    await symlink(outside, join(fx.home, 'out'));
    expect((await refused(fx.files.readFile(fx.ctx(), { path: tp('out/secret.txt') }))).code).toBe('outside_workspace');
    expect((await refused(fx.files.writeFile(fx.ctx(), { path: tp('out/evil.txt'), content: 'x' }))).code).toBe(
      'outside_workspace',
    );
    expect((await refused(fx.files.writeFile(fx.ctx(), { path: tp('out/deeper/evil.txt'), content: 'x' }))).code).toBe(
      'outside_workspace',
    );
    await expect(stat(join(outside, 'evil.txt'))).rejects.toThrow(/ENOENT/);
    await expect(stat(join(outside, 'deeper'))).rejects.toThrow(/ENOENT/);
    expect(
      (await refused(fx.files.listFiles(fx.ctx(), { path: tp('out'), depth: 1, dirs_only: false, detailed: false })))
        .code,
    ).toBe('outside_workspace');
  });

  it("refuses another user's workspace by path and by symlink", async () => {
    const other = await fx.workspaces.jail(randomUUID());
    await writeFile(join(other.root, 'theirs.txt'), 'other user\n');
    const otherId = other.root.split('/').pop() as string;
    expect((await refused(fx.files.readFile(fx.ctx(), { path: tp(`../${otherId}/theirs.txt`) }))).code).toBe(
      'outside_workspace',
    );
    expect((await refused(fx.files.readFile(fx.ctx(), { path: tp(`/workspace/../${otherId}/theirs.txt`) }))).code).toBe(
      'outside_workspace',
    );
    await symlink(other.root, join(fx.home, 'peer'));
    expect((await refused(fx.files.readFile(fx.ctx(), { path: tp('peer/theirs.txt') }))).code).toBe(
      'outside_workspace',
    );
    expect(
      (
        await refused(
          fx.files.editFile(fx.ctx(), { path: tp('peer/theirs.txt'), old: 'other', new: 'mine', replace_all: false }),
        )
      ).code,
    ).toBe('outside_workspace');
    expect(await readFile(join(other.root, 'theirs.txt'), 'utf8')).toBe('other user\n');
  });

  it('refuses .. escapes, absolute paths outside and NUL bytes before touching the disk', async () => {
    expect((await refused(fx.files.readFile(fx.ctx(), { path: tp('../../outside/secret.txt') }))).message).toContain(
      '../../outside/secret.txt',
    );
    expect((await refused(fx.files.writeFile(fx.ctx(), { path: tp('/etc/skald-test'), content: 'x' }))).code).toBe(
      'outside_workspace',
    );
    expect((await refused(fx.files.writeFile(fx.ctx(), { path: tp('a\0b'), content: 'x' }))).code).toBe(
      'invalid_argument',
    );
  });

  it('follows symlinks that stay inside the workspace (file and directory)', async () => {
    await mkdir(join(fx.home, 'real'));
    await writeFile(join(fx.home, 'real', 'a.txt'), 'inside\n');
    await symlink('real', join(fx.home, 'alias'));
    await symlink('real/a.txt', join(fx.home, 'a-link.txt'));
    expect((await fx.files.readFile(fx.ctx(), { path: tp('alias/a.txt') })).result).toBe('     1\tinside');
    expect((await fx.files.readFile(fx.ctx(), { path: tp('a-link.txt') })).result).toBe('     1\tinside');
    await fx.files.writeFile(fx.ctx(), { path: tp('a-link.txt'), content: 'changed\n' });
    expect(await readFile(join(fx.home, 'real', 'a.txt'), 'utf8')).toBe('changed\n');
    await fx.files.writeFile(fx.ctx(), { path: tp('alias/new/b.txt'), content: 'b' });
    expect(await readFile(join(fx.home, 'real', 'new', 'b.txt'), 'utf8')).toBe('b');
  });

  it('verifies the opened descriptor: a symlink chain ending outside is refused', async () => {
    await symlink(join(outside, 'secret.txt'), join(fx.home, 'hop2'));
    await symlink('hop2', join(fx.home, 'hop1'));
    expect((await refused(fx.files.readFile(fx.ctx(), { path: tp('hop1') }))).code).toBe('outside_workspace');
  });

  it('opens directories through the jail and names workspace paths in errors', async () => {
    const jail = await fx.workspaces.jail(fx.userId);
    await writeFile(join(fx.home, 'file'), 'x');
    const e = await refused(jail.openDir(resolveWorkspacePath(tp('file/sub'))));
    expect(e.code).toBe('not_a_directory');
    expect(e.message).toBe('/workspace/file is not a directory (in /workspace/file/sub)');
    const missing = await refused(jail.openRead(resolveWorkspacePath(tp('nope/x.txt'))));
    expect(missing.message).toBe('no such directory: /workspace/nope (in /workspace/nope/x.txt)');
  });
});
