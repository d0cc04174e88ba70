import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { ToolRunnerConfigSchema } from '../../config';
import { BwrapCommandRunner } from '../bwrap-command.runner';
import { CommandRequest } from '../command-runner';

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
    const r = runner({});
    const status = await r.init();
    expect(status.available).toBe(false);
    expect(status.summary).toMatch(/no bound on the number of processes.*SKALD_SANDBOX_UNBOUNDED=allow/);
    await expect(r.run(req('echo never'))).rejects.toThrow(/no bound on the number of processes/);
  });

  it('with SKALD_SANDBOX_UNBOUNDED=allow: rlimits bound memory per process, and /tmp its size', async () => {
    const r = runner({ SKALD_SANDBOX_UNBOUNDED: 'allow' });
    const status = await r.init();
    expect(status.summary).toMatch(/limits \(rlimits only, no cgroup\): processes NOT limited/);
    expect(status.summary).toContain('256 MiB address space per process (RLIMIT_AS');
    const big = await r.run(
      req(
        'python3 -c "b = bytearray(600 * 1024 * 1024); print(\'allocated\')" 2>&1 | tail -1; head -c 32000000 /dev/zero > /tmp/x; echo "tmp=$?"',
      ),
    );
    expect(big).toMatchObject({ kind: 'exited', output: expect.stringMatching(/^MemoryError\n[\s\S]*tmp=1\n$/) });
  });
});
