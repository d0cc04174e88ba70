import { transformFileSync } from '@swc/core';
import fc from 'fast-check';
import { writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diskUsage } from './disk-usage';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.log(`disk usage differential: seed ${SEED} (FC_SEED=${SEED} replays)`);

/** One entry of a generated tree: a directory, a file of some size (sparse or not), or a symlink. */
const entry = fc.oneof(
  fc.constant({ kind: 'dir' as const, size: 0 }),
  fc.record({ kind: fc.constant('file' as const), size: fc.nat(5000) }),
  fc.record({ kind: fc.constant('sparse' as const), size: fc.nat(10_000_000) }),
  fc.constant({ kind: 'link' as const, size: 0 }),
);

/** Real file trees and find(1): seconds on a busy 2-core machine, never a bound of what is tested. */
const LOADED_MACHINE_MS = 60_000;

describe('diskUsage', () => {
  let base: string;
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'skald-du-'));
  });
  afterAll(() => rm(base, { recursive: true, force: true }));

  it(
    'agrees with find(1) on bytes (apparent size of regular files) and entries of generated trees',
    async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(fc.nat(30), entry), { maxLength: 40 }), async (plan) => {
          const root = join(base, `t${n++}`);
          await mkdir(root);
          const dirs = [root];
          for (const [i, e] of plan) {
            const parent = dirs[i % dirs.length];
            const path = join(parent, `e${dirs.length}-${i}-${Math.random().toString(36).slice(2, 6)}`);
            if (e.kind === 'dir') {
              await mkdir(path);
              dirs.push(path);
            } else if (e.kind === 'file') await writeFile(path, Buffer.alloc(e.size, 1));
            else if (e.kind === 'sparse') {
              await writeFile(path, '');
              await truncate(path, e.size);
            } else await symlink(dirs[0], path);
          }
          const entries = execFileSync('find', [root, '-mindepth', '1', '-printf', '%y %s\n'], { encoding: 'utf8' })
            .split('\n')
            .filter((l) => l !== '');
          const bytes = entries.filter((l) => l.startsWith('f ')).reduce((t, l) => t + Number(l.slice(2)), 0);
          expect(await diskUsage(root)).toEqual({ bytes, inodes: entries.length, partial: false });
          await rm(root, { recursive: true });
        }),
        { seed: SEED, numRuns: 60 },
      );
    },
    LOADED_MACHINE_MS,
  );

  it(
    'stops once a bound is passed, whatever the size of the tree (a lower bound, marked partial)',
    async () => {
      const root = join(base, 'many');
      await mkdir(root);
      await Promise.all(Array.from({ length: 3000 }, (_, i) => writeFile(join(root, `f${i}`), '')));
      expect(await diskUsage(root, { bytes: 1e9, inodes: 100 })).toEqual({ bytes: 0, inodes: 101, partial: true });
      expect(await diskUsage(root, { bytes: 1e9, inodes: 3000 })).toEqual({ bytes: 0, inodes: 3000, partial: false });
      await writeFile(join(root, 'big'), Buffer.alloc(2000));
      expect((await diskUsage(root, { bytes: 1000, inodes: 1e6 })).partial).toBe(true);
    },
    LOADED_MACHINE_MS,
  );

  it('a runner that is not root still counts what its owner hid with chmod 000 / 600', () => {
    // The walk runs as uid 1000 (what a pod's runner is) over a tree that uid owns.
    const root = join(base, 'hidden');
    // This very module, compiled for a plain node (disk-usage.ts imports node's modules only).
    const walker = join(base, 'disk-usage.js');
    const { code } = transformFileSync(join(__dirname, 'disk-usage.ts'), {
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
      module: { type: 'commonjs' },
    });
    writeFileSync(walker, code);
    const script = `
      const { mkdirSync, writeFileSync, chmodSync } = require('node:fs');
      const { diskUsage } = require(${JSON.stringify(walker)});
      const root = ${JSON.stringify(root)};
      mkdirSync(root + '/a/b', { recursive: true });
      mkdirSync(root + '/c');
      writeFileSync(root + '/a/b/f', Buffer.alloc(1000));
      writeFileSync(root + '/c/g', Buffer.alloc(500));
      for (let i = 0; i < 20; i++) writeFileSync(root + '/a/b/e' + i, '');
      chmodSync(root + '/a', 0o000);
      chmodSync(root + '/c', 0o600);
      diskUsage(root).then((u) => process.stdout.write(JSON.stringify(u)));
    `;
    execFileSync('mkdir', ['-p', root]);
    execFileSync('chown', ['1000:1000', root]);
    execFileSync('chmod', ['755', base]);
    const out = execFileSync(
      'setpriv',
      ['--reuid=1000', '--regid=1000', '--clear-groups', '--inh-caps=-all', process.execPath, '-e', script],
      { encoding: 'utf8', cwd: __dirname },
    );
    expect(JSON.parse(out)).toEqual({ bytes: 1500, inodes: 25, partial: false });
  });

  it('answers zero for a missing root', async () => {
    expect(await diskUsage(join(base, 'missing'))).toEqual({ bytes: 0, inodes: 0, partial: false });
  });
});
