import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { MAX_DEPTH, Usage } from './disk-usage';
import { full, over, WorkspacesService } from './workspaces.service';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Polls `ok` every 10 ms for at most 10 s (a loaded machine delays timers). */
async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !ok(); i++) await sleep(10);
  expect(ok()).toBe(true);
}

describe('WorkspacesService: usage while something else writes the workspace', () => {
  let base: string;
  let svc: WorkspacesService;
  beforeEach(async () => {
    base = await mkdtemp(join(tmpdir(), 'skald-watch-'));
    svc = new WorkspacesService({ root: base, quota: 1000, inodes: 10, sampleMs: 20 });
  });
  afterEach(() => rm(base, { recursive: true, force: true }));

  it('samples while watched, one sampler for every watcher of a workspace, and stops when the last leaves', async () => {
    const user = randomUUID();
    const jail = await svc.jail(user);
    const a: Usage[] = [];
    const b: Usage[] = [];
    const stopA = svc.watch(user, (u) => a.push(u));
    const stopB = svc.watch(user, (u) => b.push(u));
    await writeFile(join(jail.root, 'x'), Buffer.alloc(300));
    await until(() => a.at(-1)?.bytes === 300);
    expect(a.at(-1)).toEqual({ bytes: 300, inodes: 1, partial: false });
    // Both hear the same walks.
    expect(a.length).toBe(b.length);
    stopA();
    const heardA = a.length;
    await until(() => b.length > heardA + 1);
    expect(a.length).toBe(heardA);
    stopB();
    const heardB = b.length;
    await sleep(100);
    expect([a.length, b.length]).toEqual([heardA, heardB]);
  });

  it('the check after a command waits for the walk after it, never the figures from before', async () => {
    const user = randomUUID();
    const jail = await svc.jail(user);
    expect((await svc.used(user, jail)).bytes).toBe(0);
    // Written behind the file tools' back, as a command does.
    await writeFile(join(jail.root, 'big'), Buffer.alloc(1000));
    svc.remeasureSoon(user);
    expect(await svc.used(user, jail)).toEqual({ bytes: 1000, inodes: 1, partial: false });
  });

  it('a walk is bounded by the quota: one past it is enough to know', async () => {
    const user = randomUUID();
    const jail = await svc.jail(user);
    for (let i = 0; i < 50; i++) await writeFile(join(jail.root, `e${i}`), '');
    expect(await svc.measure(user)).toEqual({ bytes: 0, inodes: 11, partial: true });
  });

  it('a walk that cannot measure the tree is heard as over quota, never skipped, and never cached', async () => {
    // A quota the tree stays under: the walk is not stopped by it before the depth bound.
    svc = new WorkspacesService({ root: base, quota: 1e9, inodes: 1e6, sampleMs: 20 });
    const user = randomUUID();
    const jail = await svc.jail(user);
    // Deeper than the walker descends: every walk answers `unmeasured` (the deterministic case of a
    // walk that cannot measure; a swap under the walk is the racing one, disk-usage-race).
    await mkdir(join(jail.root, ...Array.from({ length: MAX_DEPTH + 1 }, () => 'd')), { recursive: true });
    const heard: Usage[] = [];
    const stop = svc.watch(user, (u) => heard.push(u));
    await until(() => heard.length >= 2);
    stop();
    const limits = { bytes: 1e9, inodes: 1e9 };
    for (const u of heard) {
      expect(u.unmeasured).toMatch(/nest deeper than/);
      expect(over(u, limits)).toBe(true);
    }
    const used = await svc.used(user, jail);
    expect(full(used, limits)).toBe(true);
    // Not cached: once the tree is measurable the next check measures it.
    await rm(join(jail.root, 'd'), { recursive: true });
    expect(await svc.used(user, jail)).toEqual({ bytes: 0, inodes: 0, partial: false });
    // a hang guard: 257 nested directories made, walked and removed take 1–5 s on a loaded 2-core machine
  }, 30_000);
});
