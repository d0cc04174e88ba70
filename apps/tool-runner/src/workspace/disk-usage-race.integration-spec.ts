import { transformFileSync } from '@swc/core';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { recordAttackSuite } from '@skald/testing';

/**
 * The usage walker against a hostile command: while the walker samples a
 * workspace again and again, a process of the workspace's uid swaps a directory of it with a symlink
 * to a host directory (`renameat2(RENAME_EXCHANGE)`, 10,000 swaps) and makes the directory
 * unreadable to its owner after every swap (the walker's chmod path). Both run as uid 1000, the uid
 * of a runner that is not root and of the files it owns — the host directory too, so a chmod that
 * follows the link would succeed. No host file may change (mode, owner, mtime, ctime, content), no
 * measured sample may count a host file, and every sample answers: a figure or a fail-closed
 * `unmeasured`.
 */
const SWAPS = Number(process.env.RACE_SWAPS ?? 10_000);
const UID = 1000;
/** Compiling, 10,000 swaps and the walks beside them: seconds on a busy 2-core machine. */
const LOADED_MACHINE_MS = 180_000;

const haveCc = (() => {
  try {
    execFileSync('cc', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

interface Snapshot {
  [path: string]: { mode: number; uid: number; gid: number; mtimeMs: number; ctimeMs: number; sha?: string };
}

function snapshot(dir: string): Snapshot {
  const out: Snapshot = {};
  const visit = (path: string): void => {
    const st = lstatSync(path);
    out[path] = { mode: st.mode, uid: st.uid, gid: st.gid, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
    if (st.isFile()) out[path].sha = createHash('sha256').update(readFileSync(path)).digest('hex');
    if (st.isDirectory()) {
      // The sentinel tree is made by this test and stays readable to root whatever its modes.
      for (const name of readdirSync(path)) visit(join(path, name));
    }
  };
  visit(dir);
  return out;
}

(haveCc ? describe : describe.skip)('disk usage walker under a renameat2(RENAME_EXCHANGE) race', () => {
  let base: string;
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'skald-du-race-'));
    chmodSync(base, 0o755);
  });
  afterAll(() => rm(base, { recursive: true, force: true }));

  it(
    `${SWAPS} swaps of a workspace directory with a symlink to a host directory change no host file and skip no sample`,
    async () => {
      // The swapping helper, compiled now (node cannot call renameat2).
      const helper = join(base, 'rename-exchange');
      execFileSync('cc', ['-O2', '-o', helper, join(__dirname, '../testing-fixtures/rename-exchange.c')]);
      // This very walker, compiled for a plain node (disk-usage.ts imports node's modules only).
      const walker = join(base, 'disk-usage.js');
      // DISK_USAGE_SOURCE runs the race against another version of it (the old one: it fails).
      const { code } = transformFileSync(process.env.DISK_USAGE_SOURCE ?? join(__dirname, 'disk-usage.ts'), {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'commonjs' },
      });
      writeFileSync(walker, code);

      // The host: a directory of the runner's uid, holding sentinel files of known modes and content
      // and a directory its owner cannot read (what a chmod-ing walker would "give back").
      const host = join(base, 'host');
      mkdirSync(join(host, 'locked'), { recursive: true });
      const sentinels: Array<[string, number]> = [
        ['secret', 0o600],
        ['readonly', 0o400],
        ['config.json', 0o640],
        ['locked/inner', 0o600],
      ];
      for (const [name, mode] of sentinels) {
        writeFileSync(join(host, name), `sentinel ${name}\n`.repeat(1000));
        chmodSync(join(host, name), mode);
      }
      for (const path of [host, join(host, 'locked'), ...sentinels.map(([n]) => join(host, n))])
        chownSync(path, UID, UID);
      chmodSync(join(host, 'locked'), 0o000);
      chmodSync(host, 0o700);
      const hostBytes = sentinels.length * 'sentinel config.json\n'.length * 1000;

      // The workspace: `d` (a directory with three 100-byte files) and `l` (a symlink to the host).
      const ws = join(base, 'ws');
      mkdirSync(join(ws, 'd'), { recursive: true });
      for (const f of ['x1', 'x2', 'x3']) writeFileSync(join(ws, 'd', f), Buffer.alloc(100, 1));
      symlinkSync(host, join(ws, 'l'));
      execFileSync('chown', ['-hR', `${UID}:${UID}`, ws]);
      chmodSync(join(ws, 'd'), 0o077);
      const workspaceBytes = 300;
      const workspaceEntries = 5; // d, l, d/x1, d/x2, d/x3

      const before = snapshot(host);
      const stop = join(base, 'stop');
      // The walker, as uid 1000: walks until the swapping is over, reporting every sample.
      const script = `
        const { existsSync } = require('node:fs');
        const { diskUsage } = require(${JSON.stringify(walker)});
        (async () => {
          const out = { samples: 0, measured: 0, unmeasured: 0, threw: 0, maxBytes: 0, maxInodes: 0, reasons: {} };
          const deadline = Date.now() + ${LOADED_MACHINE_MS - 30_000};
          while (!existsSync(${JSON.stringify(stop)}) && Date.now() < deadline) {
            out.samples++;
            try {
              const u = await diskUsage(${JSON.stringify(ws)});
              if (u.unmeasured) {
                out.unmeasured++;
                const why = u.unmeasured.replace(/\\/[^ ]*/g, '<path>');
                out.reasons[why] = (out.reasons[why] || 0) + 1;
              } else {
                out.measured++;
                out.maxBytes = Math.max(out.maxBytes, u.bytes);
                out.maxInodes = Math.max(out.maxInodes, u.inodes);
              }
            } catch (e) {
              out.threw++;
            }
          }
          process.stdout.write(JSON.stringify(out));
        })();
      `;
      const asUid = ['--reuid', String(UID), '--regid', String(UID), '--clear-groups', '--inh-caps=-all'];
      const run = (cmd: string, args: string[], cwd: string): Promise<string> =>
        new Promise((resolve, reject) => {
          const child = spawn('setpriv', [...asUid, cmd, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
          child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
          child.on('error', reject);
          child.on('close', (code) =>
            code === 0 ? resolve(stdout) : reject(new Error(`${cmd} exited ${code}: ${stderr}`)),
          );
        });
      const walking = run(process.execPath, ['-e', script], __dirname);
      // Let the walker start before the swapping does.
      await new Promise((r) => setTimeout(r, 300));
      const swapped = await run(helper, ['d', 'l', String(SWAPS), '20', '077'], ws).finally(() =>
        writeFileSync(stop, ''),
      );
      const report = JSON.parse(await walking) as {
        samples: number;
        measured: number;
        unmeasured: number;
        threw: number;
        maxBytes: number;
        maxInodes: number;
        reasons: Record<string, number>;
      };
      const after = snapshot(host);
      const changed = Object.keys(before).filter((p) => JSON.stringify(before[p]) !== JSON.stringify(after[p]));
      console.log(
        `walker race: ${Number(swapped)} swaps, ${report.samples} samples (${report.measured} measured, ` +
          `${report.unmeasured} fail-closed, ${report.threw} threw), host files changed: ${changed.length}` +
          (changed.length ? ` (${changed.map((p) => p.slice(base.length)).join(', ')})` : '') +
          `, reasons ${JSON.stringify(report.reasons)}`,
      );
      recordAttackSuite('walker-race', 'renameat2', {
        swaps: Number(swapped),
        samples: report.samples,
        host_files_changed: changed.length,
      });
      expect(Number(swapped)).toBe(SWAPS);
      expect(report.samples).toBeGreaterThan(0);
      expect(changed).toEqual([]);
      expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
      // Every sample answered, and a measured one never counted a host file.
      expect(report.threw).toBe(0);
      expect(report.measured + report.unmeasured).toBe(report.samples);
      expect(report.maxBytes).toBeLessThanOrEqual(workspaceBytes);
      expect(report.maxBytes).toBeLessThan(hostBytes);
      expect(report.maxInodes).toBeLessThanOrEqual(workspaceEntries);
    },
    LOADED_MACHINE_MS,
  );
});

if (!haveCc) console.warn('disk usage race test SKIPPED: no C compiler (cc) to build the renameat2 helper');
