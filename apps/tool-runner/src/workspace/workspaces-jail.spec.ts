import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, rmdir, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkspacesService } from './workspaces.service';

/**
 * `WorkspacesService.jail`: the workspace directory is created (0700) on first use and found
 * again without being created on every call; whatever stands in its place that is not a
 * directory of its own is refused as before; a workspace removed underneath is created again.
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
});
