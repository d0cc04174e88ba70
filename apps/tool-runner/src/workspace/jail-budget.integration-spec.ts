/**
 * The jail's inode budget against the kernel: each generated case builds a real directory tree,
 * writes through the jail's descriptors and counts the inodes with a real walk (integration: a
 * real file system, 150 trees).
 */
import fc from 'fast-check';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diskUsage } from './disk-usage';
import { Jail } from './jail';
import { resolveWorkspacePath } from './workspace-path';
import { tp } from '../testing-fixtures/workspace-fixture';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.log(`jail inode budget: seed ${SEED} (FC_SEED=${SEED} replays)`);

class Full extends Error {}

const name = fc.constantFrom('a', 'b', 'c');
const path = fc.array(name, { minLength: 1, maxLength: 6 });

describe('Jail.openWrite with an inode budget', () => {
  let base: string;
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'skald-budget-'));
  });
  afterAll(() => rm(base, { recursive: true, force: true }));

  it('never creates more entries than the budget, and a refused write creates none (all or nothing)', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(path, { maxLength: 6 }), path, fc.nat(8), async (existing, target, left) => {
        const root = join(base, `w${n++}`);
        await mkdir(root);
        // An existing tree of directories; a target that is one of them is refused otherwise.
        for (const p of existing) await mkdir(join(root, ...p), { recursive: true });
        const jail = await Jail.at(root);
        const before = (await diskUsage(root)).inodes;
        const wp = resolveWorkspacePath(tp(target.join('/')));
        let outcome: { newInodes: number; created: boolean } | 'full' | 'other';
        try {
          const t = await jail.openWrite(wp, { create: true, budget: { left, full: () => new Full() } });
          outcome = { newInodes: t.newInodes, created: t.created };
          await t.close();
        } catch (e) {
          outcome = e instanceof Full ? 'full' : 'other';
        }
        const made = (await diskUsage(root)).inodes - before;
        if (outcome === 'full') expect(made).toBe(0);
        else if (outcome !== 'other') {
          expect(outcome.newInodes).toBe(made);
          expect(made).toBeLessThanOrEqual(left);
        }
        // Enough room always succeeds unless the path runs through what is not a directory.
        if (outcome === 'full') expect(left).toBeLessThan(target.length);
        await rm(root, { recursive: true });
      }),
      { seed: SEED, numRuns: 150 },
    );
  }, 30_000);

  it('rewriting an existing file needs no budget', async () => {
    const root = join(base, 'existing');
    await mkdir(join(root, 'd'), { recursive: true });
    await writeFile(join(root, 'd', 'f'), 'x');
    const jail = await Jail.at(root);
    const t = await jail.openWrite(resolveWorkspacePath(tp('d/f')), {
      create: true,
      budget: { left: 0, full: () => new Full() },
    });
    expect([t.created, t.newInodes]).toEqual([false, 0]);
    await t.close();
  });
});
