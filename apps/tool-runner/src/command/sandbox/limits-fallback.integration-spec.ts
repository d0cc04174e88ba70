import { expect } from '@jest/globals';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import { chown, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { ToolRunnerConfigSchema } from '../../config';
import { BwrapCommandRunner } from '../bwrap-command.runner';
import { CommandRequest } from '../command-runner';
import { Jail } from '../../workspace/jail';
import { resolveWorkspacePath } from '../../workspace/workspace-path';
import { tp } from '../../testing-fixtures/workspace-fixture';

jest.setTimeout(30_000);

/** Where no cgroup bounds a sandbox: refused by default, rlimits only when the operator allows it. */
describe('sandbox limits without cgroups', () => {
  const log = pino({ level: 'silent' });
  let home: string;
  const runners: BwrapCommandRunner[] = [];
  const runner = (env: Record<string, string>) => {
    const r = new BwrapCommandRunner(
      ToolRunnerConfigSchema.parse({
        SKALD_SANDBOX_CGROUPS: 'off',
        SKALD_SANDBOX_MEMORY: String(256 * 1024 ** 2),
        SKALD_SANDBOX_TMP_SIZE: String(16 * 1024 ** 2),
        ...env,
      }),
      log,
    );
    runners.push(r);
    return r;
  };
  const req = (command: string): CommandRequest => ({
    command,
    cwd: home,
    virtualCwd: '/workspace',
    home,
    timeoutSec: 20,
    signal: new AbortController().signal,
  });

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'skald-limits-'));
  });

  afterAll(async () => {
    for (const r of runners) await r.onApplicationShutdown();
    await rm(home, { recursive: true, force: true });
  });

  it('refuses commands when nothing bounds the number of processes, saying how to opt out', async () => {
    // A root runner without tenant uids: root's processes are exempt from RLIMIT_NPROC.
    const r = runner({ SKALD_SANDBOX_UID_COUNT: '0' });
    const status = await r.init();
    expect(status.available).toBe(false);
    expect(status.summary).toMatch(/no bound on the number of processes.*SKALD_SANDBOX_UNBOUNDED=allow/);
    await expect(r.run(req('echo never'))).rejects.toThrow(/no bound on the number of processes/);
  });

  it('with SKALD_SANDBOX_UNBOUNDED=allow: rlimits bound memory per process, and /tmp its size', async () => {
    const r = runner({ SKALD_SANDBOX_UNBOUNDED: 'allow', SKALD_SANDBOX_UID_COUNT: '0' });
    const status = await r.init();
    expect(status.summary).toMatch(
      /limits \(rlimits only, no cgroup, processes unbounded \(SKALD_SANDBOX_UNBOUNDED=allow\)\): processes NOT limited/,
    );
    expect(status.summary).toContain('256 MiB writable memory per process (RLIMIT_DATA');
    const big = await r.run(
      req(
        'python3 -c "b = bytearray(600 * 1024 * 1024); print(\'allocated\')" 2>&1 | tail -1; head -c 32000000 /dev/zero > /tmp/x; echo "tmp=$?"',
      ),
    );
    expect(big).toMatchObject({ kind: 'exited', output: expect.stringMatching(/^MemoryError\n[\s\S]*tmp=1\n$/) });
  });
});

/** uid → how many live host processes (zombies left out) have it as their real uid. */
async function processesOf(uid: number): Promise<number> {
  let n = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    if (new RegExp(`^Uid:\\s+${uid}\\s`, 'm').test(status) && !/^State:\s+Z/m.test(status)) n++;
  }
  return n;
}

/**
 * The fallback where no cgroup is writable, for real: forced with SKALD_SANDBOX_CGROUPS=off (this
 * machine's cgroup v1 is writable). The runner is root here, so each tenant's sandboxes run under a
 * uid of its own and RLIMIT_NPROC counts each sandbox in its own user namespace.
 */
describe('per-sandbox rlimits with tenant uids (no cgroup)', () => {
  const log = pino({ level: 'silent' });
  const PIDS = 32;
  let root: string;
  const a = randomUUID();
  const b = randomUUID();
  let r: BwrapCommandRunner;
  const req = (user: string, command: string, more: Partial<CommandRequest> = {}): CommandRequest => ({
    command,
    cwd: join(root, user),
    virtualCwd: '/workspace',
    home: join(root, user),
    timeoutSec: 20,
    signal: new AbortController().signal,
    ...more,
  });
  const text = (o: Awaited<ReturnType<BwrapCommandRunner['run']>>) =>
    `${o.kind} ${'exitCode' in o ? o.exitCode : ''}\n${o.output}`;

  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('this suite needs a root runner (tenant uids)');
    root = await mkdtemp(join(tmpdir(), 'skald-uids-'));
    for (const u of [a, b]) await mkdir(join(root, u), { mode: 0o700 });
    // Made by the runner (root) before the tenant's first sandbox.
    await writeFile(join(root, a, 'pre.txt'), 'made by the runner\n');
    await writeFile(join(root, b, 'secret.txt'), 'tenant-b-secret\n');
    r = new BwrapCommandRunner(
      ToolRunnerConfigSchema.parse({
        SKALD_SANDBOX_CGROUPS: 'off',
        SKALD_SANDBOX_PIDS: String(PIDS),
        SKALD_SANDBOX_MEMORY: String(256 * 1024 ** 2),
        SKALD_SANDBOX_TMP_SIZE: String(16 * 1024 ** 2),
        SKALD_SANDBOX_UID_BASE: '61000',
        SKALD_SANDBOX_UID_COUNT: '500',
      }),
      log,
    );
  });

  afterAll(async () => {
    await r?.onApplicationShutdown();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('names the mode on /readyz and in the log', async () => {
    const status = await r.init();
    expect(status.available).toBe(true);
    expect(status.summary).toMatch(
      /limits \(rlimits per sandbox, no cgroup; sandboxes run as their tenant's uid \(61001-61499\)\): 32 processes per sandbox \(RLIMIT_NPROC in its user namespace\), 256 MiB writable memory per process/,
    );
  });

  it("runs as its tenant's uid, which owns the workspace; the runner's files and the file tools' stay writable", async () => {
    const out = await r.run(req(a, 'echo more >> pre.txt && cat pre.txt && echo new > new.txt && id -u'));
    expect(text(out)).toBe('exited 0\nmade by the runner\nmore\n1000\n');
    const uidA = (await stat(join(root, a))).uid;
    expect(uidA).toBeGreaterThan(61000);
    expect(uidA).toBeLessThan(61500);
    expect((await stat(join(root, a, 'new.txt'))).uid).toBe(uidA);
    expect((await stat(join(root, a))).mode & 0o777).toBe(0o700);
    // A file tool (root) creating a file and a directory gives them to the tenant.
    const jail = await Jail.at(join(root, a));
    const target = await jail.openWrite(resolveWorkspacePath(tp('sub/dir/tool.txt')), { create: true });
    await target.handle.writeFile('from a file tool\n');
    await target.close();
    for (const p of ['sub', 'sub/dir', 'sub/dir/tool.txt']) expect((await stat(join(root, a, p))).uid).toBe(uidA);
    expect(text(await r.run(req(a, 'echo more >> sub/dir/tool.txt && cat sub/dir/tool.txt')))).toBe(
      'exited 0\nfrom a file tool\nmore\n',
    );
    // Another tenant gets another uid.
    expect(text(await r.run(req(b, 'true')))).toBe('exited 0\n');
    expect((await stat(join(root, b))).uid).not.toBe(uidA);
  });

  it('a fork bomb in one sandbox is bounded; sandboxes beside it (same tenant, another tenant) still start processes', async () => {
    const stop = new AbortController();
    // A fork bomb that holds on to every process it makes (the worst case for everyone else).
    const bomb = [
      'import os, time',
      'n = 0',
      'try:',
      '    while True:',
      '        if os.fork() == 0:',
      '            time.sleep(60); os._exit(0)',
      '        n += 1',
      'except OSError as e:',
      '    print("fork failed after", n, e.strerror, flush=True)',
      'time.sleep(60)',
    ].join('\n');
    await r.run(req(a, 'true')); // the tenant's uid is claimed by its first sandbox
    const uidA = (await stat(join(root, a))).uid;
    expect(uidA).toBeGreaterThan(61000);
    const bombing = r.run(req(a, `python3 -c '${bomb}'`, { timeoutSec: 60, signal: stop.signal }));
    let during = 0;
    for (let i = 0; i < 100 && during < PIDS - 2; i++) {
      await new Promise((res) => setTimeout(res, 100));
      during = await processesOf(uidA);
    }
    // At most PIDS in the sandbox (its pid 1 included), plus bwrap's monitor outside it.
    expect(during).toBeGreaterThanOrEqual(PIDS - 2);
    expect(during).toBeLessThanOrEqual(PIDS + 1);
    const spawn10 = 'for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.3 & done; wait; echo started-10';
    const [same, other] = await Promise.all([r.run(req(a, spawn10)), r.run(req(b, spawn10))]);
    expect(text(same)).toBe('exited 0\nstarted-10\n');
    expect(text(other)).toBe('exited 0\nstarted-10\n');
    // The runner itself still forks.
    expect(execFileSync('/bin/echo', ['host-ok'], { encoding: 'utf8' })).toBe('host-ok\n');
    expect(await processesOf(uidA)).toBeLessThanOrEqual(PIDS + 1);
    stop.abort();
    const ended = await bombing;
    expect(ended.kind).toBe('cancelled');
    expect(ended.output).toMatch(/fork failed after \d+ Resource temporarily unavailable/);
    for (let i = 0; i < 50 && (await processesOf(uidA)) > 0; i++) await new Promise((res) => setTimeout(res, 100));
    expect(await processesOf(uidA)).toBe(0);
  }, 60_000);

  it('bounds memory per process and every writable tmpfs (/tmp, /dev/shm); / and /dev are read-only', async () => {
    const out = await r.run(
      req(
        a,
        'python3 -c "b = bytearray(600 * 1024 * 1024); print(\'allocated\')" 2>&1 | tail -1; ' +
          'head -c 32000000 /dev/zero > /tmp/x; echo "tmp=$?"; head -c 32000000 /dev/zero > /dev/shm/x; echo "shm=$?"; ' +
          'for f in /x /dev/x; do { echo x > $f; } 2>/dev/null && echo "wrote $f"; done; echo end',
      ),
    );
    expect(text(out)).toMatch(/^exited 0\nMemoryError\n[\s\S]*tmp=1\n[\s\S]*shm=1\nend\n$/);
  });

  it('a CPU spin ends at its CPU-seconds limit', async () => {
    const started = Date.now();
    const p = await r.spawnServer({
      workspace: join(root, a),
      network: false,
      script: 'exec python3 -c "while True: pass"\n',
      cpuSeconds: 2,
      maxFileBytes: 1024 ** 2,
    });
    const ended = await Promise.race([
      p.exited,
      new Promise<'still running'>((res) => setTimeout(() => res('still running'), 15_000)),
    ]);
    if (ended === 'still running') p.kill();
    expect(ended).not.toBe('still running');
    expect(ended).not.toEqual({ code: 0, signal: null });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
  }, 30_000);

  it("a tenant's uid cannot reach another tenant's workspace on the host", async () => {
    const uidA = (await stat(join(root, a))).uid;
    const asA = (...argv: string[]) => {
      try {
        return execFileSync('setpriv', [`--reuid=${uidA}`, `--regid=${uidA}`, '--clear-groups', '--', ...argv], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        });
      } catch (e) {
        return `failed: ${(e as { stderr?: string }).stderr ?? ''}`;
      }
    };
    expect(asA('cat', join(root, b, 'secret.txt'))).toMatch(/^failed: .*Permission denied/);
    expect(asA('ls', root)).toMatch(/^failed: .*Permission denied/);
    // Its own workspace it can reach (the mode bits, not an accident of the test, keep B out).
    expect(asA('cat', join(root, a, 'pre.txt'))).toBe('made by the runner\nmore\n');
    // And inside a sandbox the other workspace does not exist at all.
    const out = await r.run(req(a, `cat ../${b}/secret.txt /workspace/../${b}/secret.txt 2>&1; true`));
    expect(out.output).not.toContain('tenant-b-secret');
  });
});

/**
 * A runner that is not root (the Compose and Kubernetes images run it as uid 1000): every sandbox
 * runs under the runner's uid, and RLIMIT_NPROC, set inside each sandbox's user namespace, still
 * bounds each on its own. The runner (built) runs in a child process as uid 1000.
 */
describe('per-sandbox rlimits in a runner that is not root', () => {
  const DIST = resolve(__dirname, '../../../dist/command/bwrap-command.runner.js');
  let dir: string;

  beforeAll(async () => {
    if (!existsSync(DIST)) throw new Error(`${DIST} is missing: run npm run build first`);
    dir = await mkdtemp(join(tmpdir(), 'skald-nonroot-'));
    await chown(dir, 1000, 1000);
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a fork bomb holds at most SKALD_SANDBOX_PIDS while another sandbox of the same uid starts processes', async () => {
    const script = join(dir, 'runner.js');
    await writeFile(
      script,
      `const { BwrapCommandRunner } = require(${JSON.stringify(DIST)});
const { ToolRunnerConfigSchema } = require(${JSON.stringify(resolve(DIST, '../../config.js'))});
const { mkdtempSync } = require('node:fs');
const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const r = new BwrapCommandRunner(ToolRunnerConfigSchema.parse({ SKALD_SANDBOX_CGROUPS: 'off', SKALD_SANDBOX_PIDS: '16' }), quiet);
const req = (command, signal) => {
  const home = mkdtempSync(${JSON.stringify(dir)} + '/ws-');
  return { command, cwd: home, virtualCwd: '/workspace', home, timeoutSec: 30, signal: signal ?? new AbortController().signal };
};
const bomb = 'import os, time\\nn = 0\\ntry:\\n    while True:\\n        if os.fork() == 0:\\n            time.sleep(30); os._exit(0)\\n        n += 1\\nexcept OSError as e:\\n    print("fork failed after", n, flush=True)\\ntime.sleep(30)';
(async () => {
  const status = await r.init();
  const stop = new AbortController();
  const bombing = r.run(req("python3 -c '" + bomb + "'", stop.signal));
  await new Promise((res) => setTimeout(res, 2000));
  const other = await r.run(req('for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.3 & done; wait; echo started-10; id -u'));
  stop.abort();
  const ended = await bombing;
  await r.onApplicationShutdown();
  console.log(JSON.stringify({ summary: status.summary, other: other.output, bomb: ended.output }));
  process.exit(0);
})();
`,
    );
    const { stdout } = await promisify(execFile)(
      'setpriv',
      ['--reuid=1000', '--regid=1000', '--clear-groups', '--', process.execPath, script],
      { cwd: dir, env: { PATH: process.env.PATH }, timeout: 60_000 },
    );
    const seen = JSON.parse(stdout.trim().split('\n').pop() as string) as Record<string, string>;
    expect(seen.summary).toMatch(
      /limits \(rlimits per sandbox, no cgroup; sandboxes run as the runner's uid 1000\): 16 processes per sandbox/,
    );
    expect(seen.other).toBe('started-10\n1000\n');
    // The sandbox's pid 1, its shell and python count too.
    expect(seen.bomb).toMatch(/^fork failed after 1[23]\n/);
  }, 90_000);
});
