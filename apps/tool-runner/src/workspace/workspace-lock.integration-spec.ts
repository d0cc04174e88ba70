import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { PgWorkspaceLock } from './pg-workspace-lock';
import { WorkspacesService } from './workspaces.service';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Two "replicas" (own services, own connection pools) writing one workspace take turns. */
describe('workspace writes across replicas', () => {
  let base: string;
  const pools: DataSource[] = [];

  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'skald-wslock-'));
    for (let i = 0; i < 2; i++) {
      const ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 4 } });
      await ds.initialize();
      pools.push(ds);
    }
  });
  afterAll(async () => {
    for (const ds of pools) await ds.destroy();
    await rm(base, { recursive: true, force: true });
  });

  const replica = (ds: DataSource) =>
    new WorkspacesService({ root: base, quota: 1024 ** 2 }, undefined, new PgWorkspaceLock(ds));

  it('never runs two writes of one workspace at once, whichever replica they land on', async () => {
    const [a, b] = [replica(pools[0]), replica(pools[1])];
    const user = randomUUID();
    let inside = 0;
    let most = 0;
    const order: string[] = [];
    const write = (svc: WorkspacesService, name: string) =>
      svc.exclusive(user, async () => {
        inside++;
        most = Math.max(most, inside);
        order.push(`${name}+`);
        await sleep(30);
        order.push(`${name}-`);
        inside--;
      });
    await Promise.all([write(a, 'a1'), write(b, 'b1'), write(a, 'a2'), write(b, 'b2'), write(b, 'b3')]);
    expect(most).toBe(1);
    expect(order).toHaveLength(10);
    for (let i = 0; i < order.length; i += 2) expect(order[i].slice(0, -1)).toBe(order[i + 1].slice(0, -1));
  });

  it("another user's workspace is not held up, and a failed write releases the lock", async () => {
    const [a, b] = [replica(pools[0]), replica(pools[1])];
    const [u1, u2] = [randomUUID(), randomUUID()];
    let u2Done = 0;
    const slow = a.exclusive(u1, () => sleep(3000));
    const t = Date.now();
    await b.exclusive(u2, async () => {
      u2Done = Date.now() - t;
    });
    expect(u2Done).toBeLessThan(2500);
    await slow;
    await expect(a.exclusive(u1, () => Promise.reject(new Error('disk full')))).rejects.toThrow('disk full');
    await expect(b.exclusive(u1, () => Promise.resolve('next'))).resolves.toBe('next');
  });
});
