import { randomUUID } from 'node:crypto';
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLAIMS_DIR, TenantUids } from './tenant-uids';

/**
 * Tenant uids on a real file system (root needed to give files away): two "replicas" claiming at
 * once never hand one uid to two workspaces nor two uids to one, and a claim gives the whole tree
 * (symlinks themselves, never their targets) to the tenant.
 */
describe('TenantUids', () => {
  let root: string;
  let workspaces: string;

  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('needs root (chown)');
    root = await mkdtemp(join(tmpdir(), 'skald-tenant-uids-'));
    await chmod(root, 0o711);
    workspaces = join(root, 'workspaces');
    await mkdir(workspaces, { mode: 0o700 });
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('two replicas claiming 40 workspaces at once agree, and no uid serves two workspaces', async () => {
    const names = Array.from({ length: 40 }, () => randomUUID());
    for (const n of names) await mkdir(join(workspaces, n), { mode: 0o700 });
    // A small pool, so that the hashed first choices collide and the probing is exercised.
    const [a, b] = [new TenantUids(62000, 64), new TenantUids(62000, 64)];
    const [ua, ub] = await Promise.all([
      Promise.all(names.map((n) => a.uidFor(join(workspaces, n)))),
      Promise.all(names.map((n) => b.uidFor(join(workspaces, n)))),
    ]);
    expect(ua).toEqual(ub);
    expect(new Set(ua).size).toBe(names.length);
    for (const [i, n] of names.entries()) {
      const st = await lstat(join(workspaces, n));
      expect([st.uid, st.gid, st.mode & 0o777]).toEqual([ua[i], ua[i], 0o700]);
      expect(await readFile(join(workspaces, CLAIMS_DIR, String(ua[i])), 'utf8')).toBe(n);
    }
    // The base is the self-test's, never a tenant's; the workspaces' directory is searchable, not listable.
    expect(ua.every((u) => u > 62000 && u < 62064)).toBe(true);
    expect((await lstat(workspaces)).mode & 0o777).toBe(0o701);
    // A fresh runner finds the same owners.
    const c = new TenantUids(62000, 64);
    expect(await Promise.all(names.map((n) => c.uidFor(join(workspaces, n))))).toEqual(ua);
  });

  it('a full pool is refused with the setting to change; a claim gives the tree away, not what links point to', async () => {
    const full = new TenantUids(63000, 2); // one tenant uid
    const first = join(workspaces, randomUUID());
    await mkdir(join(first, 'sub'), { recursive: true });
    await writeFile(join(first, 'sub', 'f'), 'x');
    const outside = join(root, 'outside.txt');
    await writeFile(outside, 'host');
    await symlink(outside, join(first, 'sub', 'link'));
    const uid = await full.uidFor(first);
    for (const p of ['sub', 'sub/f', 'sub/link']) expect((await lstat(join(first, p))).uid).toBe(uid);
    expect((await lstat(outside)).uid).toBe(0);
    const second = join(workspaces, randomUUID());
    await mkdir(second);
    await expect(full.uidFor(second)).rejects.toThrow(/no free sandbox uid .*SKALD_SANDBOX_UID_COUNT/);
    expect(await readdir(join(workspaces, CLAIMS_DIR))).toContain(String(uid));
  });
});
