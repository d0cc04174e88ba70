import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, rmdir, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkspacesService } from './workspaces.service';

/**
 * `WorkspacesService.jail`: the workspace directory is created (0700) on first use and found
 * again without being created on every call; whatever stands in its place that is not a
 * directory of its own is refused as before; a workspace removed underneath is created again.
 * A jail found once is kept while the workspace is the same directory (one `stat` a call, not a
 * `realpath` walk of the whole path: system calls are what a tool call costs on a VM).
 */
describe('WorkspacesService.jail', () => {
  let base: string;
  let svc: WorkspacesService;
  beforeEach(async () => {
    base = await mkdtemp(join(tmpdir(), 'skald-jail-'));
    svc = new WorkspacesService({ root: base, quota: 1000, inodes: 10 });
  });
  afterEach(() => rm(base, { recursive: true, force: true }));

  it('creates the workspace on first use (0700), finds it after, and creates it again once removed', async () => {
    const user = randomUUID();
    const first = await svc.jail(user);
    expect(first.root).toBe(join(base, user));
    expect((await stat(first.root)).mode & 0o777).toBe(0o700);
    await writeFile(join(first.root, 'kept'), 'x');
    const again = await svc.jail(user);
    expect(again.root).toBe(first.root);
    expect((await stat(join(again.root, 'kept'))).isFile()).toBe(true);
    await rm(first.root, { recursive: true });
    const recreated = await svc.jail(user);
    expect((await stat(recreated.root)).isDirectory()).toBe(true);
  });

  it('refuses a workspace path that is a file, as creating it did', async () => {
    const user = randomUUID();
    await writeFile(join(base, user), 'not a directory');
    await expect(svc.jail(user)).rejects.toThrow(/EEXIST|ENOTDIR|not a directory/);
  });

  it('a workspace path that is a symlink resolves to where it points only if that is a directory (as before)', async () => {
    const user = randomUUID();
    const elsewhere = join(base, 'elsewhere');
    await mkdir(elsewhere);
    await symlink(elsewhere, join(base, user));
    expect((await svc.jail(user)).root).toBe(elsewhere);
    await rmdir(elsewhere);
    await expect(svc.jail(user)).rejects.toThrow(/EEXIST|ENOENT/);
  });

  it('a workspace found once costs one stat on later calls, not a realpath', async () => {
    const user = randomUUID();
    await svc.jail(user);
    // The module object itself (an `import * as` namespace is a copy the jail does not call through).
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const realpath = jest.spyOn(require('node:fs/promises') as typeof import('node:fs/promises'), 'realpath');
    try {
      for (let i = 0; i < 5; i++) expect((await svc.jail(user)).root).toBe(join(base, user));
      expect(realpath).not.toHaveBeenCalled();
    } finally {
      realpath.mockRestore();
    }
  });

  it('a kept jail follows what stands at the path: re-pointed symlink, replaced directory, a file in its place', async () => {
    const user = randomUUID();
    const a = join(base, 'a');
    const b = join(base, 'b');
    await mkdir(a);
    await mkdir(b);
    await symlink(a, join(base, user));
    expect((await svc.jail(user)).root).toBe(a);
    await unlink(join(base, user));
    await symlink(b, join(base, user));
    expect((await svc.jail(user)).root).toBe(b);
    await unlink(join(base, user));
    await mkdir(join(base, user));
    expect((await svc.jail(user)).root).toBe(join(base, user));
    await rmdir(join(base, user));
    await writeFile(join(base, user), 'not a directory');
    await expect(svc.jail(user)).rejects.toThrow(/EEXIST|ENOTDIR|not a directory/);
  });
});
