import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Bus } from '@skald/messaging/bus-port';
import { diskUsage } from '../workspace/disk-usage';
import { RunnerOverNats, startRunnerOverNats } from '../testing-fixtures/runner-over-nats';

jest.setTimeout(60_000);

const QUOTA = 4 * 1024 ** 2;
const INODES = 400;
const SAMPLE_MS = 50;

/**
 * The workspace quota holds while a command runs, against the real runner under bubblewrap: bytes
 * written as many files (each below RLIMIT_FSIZE) and inodes (empty files, directories) are stopped
 * mid-command, the tenant at the quota is refused, and another tenant on the same runner is not.
 */
describe('workspace quota while a command runs (bubblewrap)', () => {
  let base: string;
  let client: Bus;
  let runner: RunnerOverNats;
  const marker = `skald-quota-${process.pid}`;

  beforeAll(async () => {
    execFileSync('bwrap', ['--version'], { stdio: 'ignore' });
    runner = await startRunnerOverNats('tool-runner-quota', {
      SKALD_SANDBOX: 'bwrap',
      SKALD_SANDBOX_PIDS: '64',
      SKALD_SANDBOX_MEMORY: String(256 * 1024 ** 2),
      SKALD_SANDBOX_TMP_SIZE: String(8 * 1024 ** 2),
      SKALD_WORKSPACE_QUOTA: String(QUOTA),
      SKALD_WORKSPACE_INODES: String(INODES),
      SKALD_WORKSPACE_SAMPLE_MS: String(SAMPLE_MS),
    });
    ({ client, base } = runner);
  }, 60_000);

  afterAll(async () => {
    await runner?.stop();
  });

  function exec(user: string, name: string, args: Record<string, unknown>) {
    return client.call(
      'tools.exec',
      {
        actor: { userId: user, role: 'user' },
        session_id: randomUUID(),
        tool_call_id: randomUUID(),
        name,
        arguments: args,
      },
      { timeoutMs: 60_000 },
    );
  }
  const cmd = (user: string, command: string, timeout = 30) =>
    exec(user, 'execute_cmd', { command: `: ${marker}; ${command}`, timeout });
  const text = (reply: Awaited<ReturnType<typeof exec>>): string =>
    reply.status === 'done' ? reply.result : reply.status === 'failed' ? reply.error : '(cancelled)';
  const usage = (user: string) => diskUsage(join(base, 'workspaces', user));
  const killedLine = new RegExp(
    `^workspace quota exceeded: (more than )?[0-9.]+ (B|KiB|MiB) / (more than )?[0-9]+ files ` +
      `\\(quota 4\\.0 MiB / ${INODES} files and directories\\); the command was killed\\. Delete files to make room\\.`,
  );

  /** A tenant at the quota: the next command and the next new file are refused, with the figures. */
  async function expectRefused(user: string): Promise<void> {
    const next = await cmd(user, 'echo should-not-run');
    expect(next.status).toBe('failed');
    expect(text(next)).toMatch(
      new RegExp(
        `^workspace quota exceeded: .* \\(quota 4\\.0 MiB / ${INODES} files and directories\\); the command was not run\\.`,
      ),
    );
    expect(text(next)).not.toContain('should-not-run');
    const write = await exec(user, 'write_file', { path: 'one-more.txt', content: 'x'.repeat(2000) });
    expect(write.status).toBe('failed');
    expect(text(write)).toMatch(/^workspace quota exceeded: writing \/workspace\/one-more\.txt /);
  }

  it('kills a command writing many files (each below RLIMIT_FSIZE) past the byte quota while it runs; another tenant is unaffected', async () => {
    const hog = randomUUID();
    const other = randomUUID();
    // 100000 files of 256 KiB (24 GiB): minutes of writing, were it not stopped.
    const started = performance.now();
    const running = cmd(
      hog,
      'i=0; while [ $i -lt 100000 ]; do head -c 262144 /dev/zero > f$i || exit 9; i=$((i+1)); done; echo finished',
    );
    // Meanwhile another tenant's command and write on the same runner work.
    const [theirs, written] = await Promise.all([
      cmd(other, 'head -c 1000000 /dev/zero > mine && wc -c < mine'),
      exec(other, 'write_file', { path: 'notes.txt', content: 'fine\n' }),
    ]);
    expect(text(theirs)).toBe('1000000\n[exit code: 0]');
    expect(written.status).toBe('done');
    const reply = await running;
    const took = performance.now() - started;
    expect(reply.status).toBe('failed');
    expect(text(reply)).toMatch(killedLine);
    expect(text(reply)).not.toContain('finished');
    expect(took).toBeLessThan(10_000);
    const after = await usage(hog);
    console.log(`byte quota: killed after ${took.toFixed(0)} ms at ${after.bytes} B (quota ${QUOTA} B)`);
    expect(after.bytes).toBeGreaterThan(QUOTA);
    // Overshoot: what the loop writes in about one sampling interval, far below what it set out to write.
    expect(after.bytes).toBeLessThan(QUOTA + 64 * 1024 ** 2);
    await expectRefused(hog);
    // The other tenant still works after.
    expect(text(await cmd(other, 'cat notes.txt'))).toBe('fine\n[exit code: 0]');
  });

  it.each([
    ['empty files (touch)', 'i=0; while [ $i -lt 1000000 ]; do touch e$i; i=$((i+1)); done; echo finished'],
    ['directories (mkdir -p)', 'i=0; while [ $i -lt 1000000 ]; do mkdir -p d$i/x; i=$((i+1)); done; echo finished'],
    ['empty files without a fork (: >)', 'i=0; while [ $i -lt 1000000 ]; do : > e$i; i=$((i+1)); done; echo finished'],
  ])('stops a command creating a million %s at the inode quota', async (_what, command) => {
    const hog = randomUUID();
    const started = performance.now();
    const reply = await cmd(hog, command);
    const took = performance.now() - started;
    expect(reply.status).toBe('failed');
    expect(text(reply)).toMatch(killedLine);
    expect(text(reply)).not.toContain('finished');
    expect(took).toBeLessThan(15_000);
    const after = await usage(hog);
    console.log(
      `inode quota (${_what}): killed after ${took.toFixed(0)} ms at ${after.inodes} entries (quota ${INODES})`,
    );
    expect(after.inodes).toBeGreaterThan(INODES);
    expect(after.inodes).toBeLessThan(100_000);
    await expectRefused(hog);
    // Another tenant creates files as usual.
    const other = randomUUID();
    expect(text(await cmd(other, 'mkdir -p a/b && touch a/b/c && ls a/b'))).toBe('c\n[exit code: 0]');
  });

  it('a big file is stopped at the quota (RLIMIT_FSIZE) with a tool_error; then the tenant is refused', async () => {
    const user = randomUUID();
    const started = performance.now();
    // 10 GiB would take a while; the write stops at the 4 MiB left.
    const reply = await cmd(user, `head -c 10000000000 /dev/zero > big; echo "rc=$?"`);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(reply.status).toBe('failed');
    expect(text(reply)).toMatch(
      /^workspace quota exceeded: a file write of the command was stopped at the 4\.0 MiB left of the 4\.0 MiB quota\. Delete files to make room\.\n/,
    );
    expect(text(reply)).toMatch(/rc=1[0-9]{2}|File size limit exceeded/);
    expect((await usage(user)).bytes).toBe(QUOTA);
    await expectRefused(user);
    expect(text(await cmd(randomUUID(), 'echo ok'))).toBe('ok\n[exit code: 0]');
  });
});
