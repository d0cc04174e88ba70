import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Usage } from './disk-usage';
import { WorkspacesService } from './workspaces.service';

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
});
