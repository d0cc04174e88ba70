import fc from 'fast-check';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { workspaceFixture, WorkspaceFixture, tp } from '../testing-fixtures/workspace-fixture';
import { ToolError } from '../tool-error';
import { PatternPool } from '../patterns/pattern-pool';
import { WorkspacesService } from '../workspace/workspaces.service';
import { FileToolsService } from './file-tools.service';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.log(`read fast path: seed ${SEED} (FC_SEED=${SEED} replays)`);

/** What a read answered: its text, or the error's code and sentence. */
async function outcome(files: FileToolsService, ctx: ReturnType<WorkspaceFixture['ctx']>, path: string) {
  try {
    return { ok: (await files.readFile(ctx, { path: tp(path) })).result };
  } catch (e) {
    if (!(e instanceof ToolError)) throw e;
    return { code: e.code, message: e.message };
  }
}

/** Whether `fn` settled before a `setImmediate` queued with it ran: no thread-pool hop on the way. */
async function settlesInThisPass(fn: () => Promise<unknown>): Promise<boolean> {
  let immediate = false;
  setImmediate(() => {
    immediate = true;
  });
  await fn();
  return !immediate;
}

describe('read_file: small files on the event loop, everything else as before', () => {
  let fx: WorkspaceFixture;
  let outside: string;
  let slowPatterns: PatternPool;
  /** The same workspaces with the fast path off: every call through the thread pool (the old path). */
  let slow: FileToolsService;

  beforeEach(async () => {
    fx = await workspaceFixture();
    outside = join(fx.base, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'secret.txt'), 'host secret\n');
    const ws = new WorkspacesService({ root: join(fx.base, 'ws'), quota: 1024 ** 3, usageTtlMs: 0, syncReadBytes: 0 });
    slowPatterns = new PatternPool();
    slow = new FileToolsService(ws, slowPatterns);
  });
  afterEach(async () => {
    await slowPatterns.onModuleDestroy();
    await fx.cleanup();
  });

  it('reads a small file without a thread-pool hop, and a file above the bound through the pool', async () => {
    await writeFile(join(fx.home, 'small.txt'), 'hello\n');
    await mkdir(join(fx.home, 'a/b'), { recursive: true });
    await writeFile(join(fx.home, 'a/b/deep.txt'), 'deep\n');
    await writeFile(join(fx.home, 'big.txt'), 'x'.repeat(fx.workspaces.syncReadBytes + 1));
    await fx.files.readFile(fx.ctx(), { path: tp('small.txt') }); // the jail is kept
    expect(await settlesInThisPass(() => fx.files.readFile(fx.ctx(), { path: tp('small.txt') }))).toBe(true);
    expect(await settlesInThisPass(() => fx.files.readFile(fx.ctx(), { path: tp('a/b/deep.txt') }))).toBe(true);
    expect(await settlesInThisPass(() => fx.files.readFile(fx.ctx(), { path: tp('big.txt') }))).toBe(false);
    // Switched off: through the pool, the same answer.
    expect(await settlesInThisPass(() => slow.readFile(fx.ctx(), { path: tp('small.txt') }))).toBe(false);
    expect(await outcome(slow, fx.ctx(), 'small.txt')).toEqual(await outcome(fx.files, fx.ctx(), 'small.txt'));
  });

  // Generated trees of files, directories and symlinks (inside, outside, dangling, chains, loops) and
  // generated paths through them: the fast path answers exactly what the pool path answers, and the
  // kernel decides what a read may show — text only from a regular file whose real path is inside.
  it('answers what the thread-pool path answers, and reads only what resolves inside (kernel as oracle)', async () => {
    const names = ['a', 'b', 'c', 'f.txt', 'g.txt'];
    const entry = fc.oneof(
      fc.record({ kind: fc.constant('file' as const), text: fc.string({ maxLength: 40 }) }),
      fc.record({ kind: fc.constant('bin' as const) }),
      fc.record({ kind: fc.constant('big' as const) }),
      fc.record({ kind: fc.constant('dir' as const) }),
      fc.record({
        kind: fc.constant('link' as const),
        to: fc.oneof(
          fc.constantFrom('OUT/secret.txt', 'OUT', 'OUT/missing', '/etc/passwd', '/etc', '..', '../..'),
          fc.array(fc.constantFrom(...names, '..', '.'), { minLength: 1, maxLength: 3 }).map((s) => s.join('/')),
        ),
      }),
    );
    const tree = fc.array(fc.tuple(fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 3 }), entry), {
      maxLength: 14,
    });
    const paths = fc.array(
      fc
        .array(fc.constantFrom(...names, '..', '.'), { minLength: 1, maxLength: 4 })
        .map((s) => s.join('/'))
        .chain((s) => fc.constantFrom(s, `/workspace/${s}`)),
      { minLength: 1, maxLength: 6 },
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(tree, paths, async (entries, reads) => {
        const user = `${fx.userId.slice(0, 24)}${String(++run).padStart(12, '0')}`;
        const home = join(fx.base, 'ws', user);
        mkdirSync(home, { mode: 0o700 });
        for (const [segs, e] of entries) {
          const host = join(home, ...segs);
          try {
            mkdirSync(join(host, '..'), { recursive: true });
            if (e.kind === 'file') writeFileSync(host, e.text, { flag: 'wx' });
            else if (e.kind === 'bin') writeFileSync(host, Buffer.from([0, 1, 2, 0]), { flag: 'wx' });
            else if (e.kind === 'big') writeFileSync(host, 'y\n'.repeat(fx.workspaces.syncReadBytes), { flag: 'wx' });
            else if (e.kind === 'dir') mkdirSync(host);
            else symlinkSync(e.to.startsWith('OUT') ? e.to.replace('OUT', outside) : e.to, host);
          } catch {
            // Taken already, or a parent is a file or a link: the tree is what the kernel made of it.
          }
        }
        const root = realpathSync(home);
        for (const path of reads) {
          const ctx = fx.ctx({ userId: user });
          const fast = await outcome(fx.files, ctx, path);
          expect(fast).toEqual(await outcome(slow, ctx, path));
          const rel = path.replace(/^\/workspace\/?/, '');
          let real: string | null = null;
          try {
            real = realpathSync(join(home, rel));
          } catch {
            real = null;
          }
          const inside = real !== null && (real === root || real.startsWith(`${root}/`));
          if ('ok' in fast) {
            expect(inside).toBe(true);
            expect(statSync(real as string).isFile()).toBe(true);
            expect(fast.ok).not.toContain('host secret');
            expect(fast.ok).not.toContain('root:');
          }
          if (inside && statSync(real as string).isFile()) {
            const bytes = readFileSync(real as string);
            // A text file inside the workspace is read (the lexical `..` rules aside).
            if (!bytes.includes(0) && !('ok' in fast))
              expect(['invalid_argument', 'outside_workspace']).toContain(fast.code);
          }
        }
      }),
      { seed: SEED, numRuns: 300 },
    );
  }, 120_000);

  // Another process swaps a file and a directory of the workspace for symlinks out of it as fast as
  // it can, while the runner reads through them: no read ever shows a byte from outside.
  it('never reads outside while symlinks are swapped in and out mid-call', async () => {
    await writeFile(join(fx.home, 'f.txt'), 'inside\n');
    await mkdir(join(fx.home, 'd'));
    await writeFile(join(fx.home, 'd', 'secret.txt'), 'inside too\n');
    const swapper = spawn(
      process.execPath,
      [
        '-e',
        `
        const fs = require('node:fs');
        const [home, outside] = process.argv.slice(1);
        fs.writeFileSync(home + '/f.real', 'inside\\n');
        fs.symlinkSync(outside + '/secret.txt', home + '/f.link');
        fs.mkdirSync(home + '/d.real');
        fs.writeFileSync(home + '/d.real/secret.txt', 'inside too\\n');
        fs.symlinkSync(outside, home + '/d.link');
        for (let i = 0; ; i++) {
          // rename(2) swaps atomically: the name is always one or the other.
          fs.renameSync(home + '/f.txt', home + '/f.spare');
          fs.renameSync(home + (i % 2 ? '/f.real' : '/f.link'), home + '/f.txt');
          fs.renameSync(home + '/f.spare', home + (i % 2 ? '/f.link' : '/f.real'));
          fs.renameSync(home + '/d', home + '/d.spare');
          fs.renameSync(home + (i % 2 ? '/d.real' : '/d.link'), home + '/d');
          fs.renameSync(home + '/d.spare', home + (i % 2 ? '/d.link' : '/d.real'));
        }
        `,
        fx.home,
        outside,
      ],
      { stdio: 'ignore' },
    );
    try {
      const seen = { read: 0, refused: 0 };
      for (let i = 0; i < 3000; i++) {
        for (const path of ['f.txt', 'd/secret.txt']) {
          const got = await outcome(fx.files, fx.ctx(), path);
          if ('ok' in got) {
            expect(got.ok).not.toContain('host secret');
            seen.read++;
          } else {
            expect(['outside_workspace', 'not_found', 'not_a_directory', 'not_a_file']).toContain(got.code);
            if (got.code === 'outside_workspace') seen.refused++;
          }
        }
      }
      // The race was run: both sides of the swap were met.
      expect(seen.read).toBeGreaterThan(0);
      expect(seen.refused).toBeGreaterThan(0);
    } finally {
      swapper.kill('SIGKILL');
    }
  }, 120_000);
});
