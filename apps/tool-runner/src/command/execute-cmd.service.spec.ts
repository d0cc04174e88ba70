/**
 * ExecuteCmdService with a fake CommandRunner and a faked workspace quota: what the model reads for
 * an exit code, a signal, a timeout or no output; a cancelled call; the quota refusing a command, a
 * command killed when the workspace passes its quota while it runs, a file write stopped at the
 * quota; a sandbox that failed its self-test refusing every command; live output sent as
 * `tool_progress`. The workspace is a directory under os.tmpdir() (the jail resolves the real
 * directory the command runs in).
 */
import { expect } from '@jest/globals';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '@skald/service-kit';
import { Readiness } from '@skald/service-kit/ops';
import { fake, newTestService } from '@skald/testing/unit';
import { LOGGER, TOOL_RUNNER_CONFIG } from '../config';
import { ToolCancelled, ToolContext } from '../exec/tool-context';
import { ToolError } from '../tool-error';
import { Usage } from '../workspace/disk-usage';
import { Jail } from '../workspace/jail';
import { WorkspacesService } from '../workspace/workspaces.service';
import { CommandOutcome, CommandRequest, CommandRunner, SandboxStatus } from './command-runner';
import { ExecuteCmdService, SANDBOX_UNAVAILABLE } from './execute-cmd.service';
import { ProgressSink } from './tool-progress';

const LIMITS = { bytes: 1000, inodes: 100 };
const BWRAP: SandboxStatus = { available: true, kind: 'bwrap', summary: 'bwrap sandbox ready' };

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'skald-execute-cmd-'));
  mkdirSync(join(root, 'src'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A runner that answers each request with `answer` (after `during`, which plays the command running). */
class FakeRunner extends CommandRunner {
  readonly requests: CommandRequest[] = [];
  constructor(
    private readonly status: SandboxStatus,
    private readonly answer: (req: CommandRequest) => CommandOutcome | Promise<CommandOutcome>,
  ) {
    super();
  }
  init(): Promise<SandboxStatus> {
    return Promise.resolve(this.status);
  }
  async run(req: CommandRequest): Promise<CommandOutcome> {
    this.requests.push(req);
    return this.answer(req);
  }
  stopAll(): void {}
}

interface Setup {
  answer?: (req: CommandRequest) => CommandOutcome | Promise<CommandOutcome>;
  status?: SandboxStatus;
  sandboxSetting?: 'bwrap' | 'none';
  used?: Usage;
}

function setUp(s: Setup = {}) {
  const runner = new FakeRunner(s.status ?? BWRAP, s.answer ?? (() => exited(0, 'ok\n')));
  let listener: ((u: Usage) => void) | null = null;
  const workspaces = {
    jail: () => Jail.at(root),
    limits: LIMITS,
    quota: LIMITS.bytes,
    used: jest.fn(() => Promise.resolve(s.used ?? { bytes: 400, inodes: 10, partial: false })),
    watch: jest.fn((_userId: string, l: (u: Usage) => void) => {
      listener = l;
      return () => {
        listener = null;
      };
    }),
    remeasureSoon: jest.fn(),
  };
  const progress = { publish: jest.fn() };
  const readiness = { note: jest.fn() };
  const log = { info: jest.fn(), warn: jest.fn(), error: jest.fn() };
  const { sut } = newTestService(ExecuteCmdService, [
    fake(TOOL_RUNNER_CONFIG, { SKALD_SANDBOX: s.sandboxSetting ?? 'bwrap' }),
    fake(WorkspacesService, workspaces as unknown as WorkspacesService),
    fake(CommandRunner, runner),
    fake(LOGGER, log as unknown as Logger),
    fake(Readiness, readiness),
    fake(ProgressSink, progress),
  ]);
  /** The workspace as the sampler sees it while the command runs. */
  const sample = (u: Usage): void => listener?.(u);
  return { sut, runner, workspaces, progress, readiness, log, sample };
}

function exited(exitCode: number | null, output: string, signal: string | null = null): CommandOutcome {
  return { kind: 'exited', exitCode, signal, output };
}

function ctx(over: Partial<ToolContext> = {}): ToolContext {
  return {
    userId: 'u1',
    role: 'user',
    sessionId: 's1',
    toolCallId: 'c1',
    workdir: '/workspace',
    signal: new AbortController().signal,
    ...over,
  };
}

const run = (sut: ExecuteCmdService, command = 'ls', c = ctx(), timeout = 30) => sut.execute(c, { command, timeout });

describe('ExecuteCmdService', () => {
  it('runs the command in the workspace and answers its output and exit code', async () => {
    const { sut, runner, workspaces } = setUp({ answer: () => exited(0, 'a.txt\nb.txt') });
    expect(await run(sut, 'ls', ctx(), 12)).toEqual({ result: 'a.txt\nb.txt\n[exit code: 0]' });
    expect(runner.requests[0]).toMatchObject({
      command: 'ls',
      cwd: realpathSync(root),
      virtualCwd: '/workspace',
      home: realpathSync(root),
      timeoutSec: 12,
      maxFileBytes: 600, // what is left of the 1000-byte quota
    });
    expect(workspaces.remeasureSoon).toHaveBeenCalledWith('u1');
  });

  it("runs in the session's working directory, named as the sandbox sees it", async () => {
    const { sut, runner } = setUp();
    await run(sut, 'pwd', ctx({ workdir: '/workspace/src' }));
    expect(runner.requests[0]).toMatchObject({ cwd: join(realpathSync(root), 'src'), virtualCwd: '/workspace/src' });
  });

  it('says a failing exit code, a killing signal and an empty output', async () => {
    expect(await run(setUp({ answer: () => exited(2, '') }).sut)).toEqual({ result: '(no output)\n[exit code: 2]' });
    expect(await run(setUp({ answer: () => exited(null, 'partial\n', 'SIGKILL') }).sut)).toEqual({
      result: 'partial\n[killed by signal SIGKILL]',
    });
  });

  it('answers timed_out with the output so far', async () => {
    const { sut } = setUp({ answer: () => ({ kind: 'timed_out', output: 'building…' }) });
    await expect(run(sut, 'make', ctx(), 5)).rejects.toEqual(
      new ToolError('timed_out', 'timed out after 5 s\nbuilding…'),
    );
  });

  it('ends a call its caller cancelled as cancelled, the runner told through the signal', async () => {
    const caller = new AbortController();
    const { sut, runner } = setUp({
      answer: (req) => {
        caller.abort();
        return { kind: req.signal.aborted ? 'cancelled' : 'exited', output: '' } as CommandOutcome;
      },
    });
    await expect(run(sut, 'sleep 100', ctx({ signal: caller.signal }))).rejects.toBeInstanceOf(ToolCancelled);
    expect(runner.requests[0].signal.aborted).toBe(true);
  });

  it('answers stopped when the tool runner shuts down under the command', async () => {
    const { sut } = setUp({ answer: () => ({ kind: 'stopped', output: 'half' }) });
    await expect(run(sut)).rejects.toMatchObject({
      code: 'stopped',
      message: expect.stringContaining('shut down\nhalf'),
    });
  });

  it('runs no command in a workspace at its quota', async () => {
    const { sut, runner } = setUp({ used: { bytes: 1000, inodes: 3, partial: false } });
    await expect(run(sut)).rejects.toMatchObject({
      code: 'quota_exceeded',
      message: expect.stringContaining('the command was not run'),
    });
    expect(runner.requests).toEqual([]);
  });

  it('kills a command once the workspace passes its quota while it runs, and says so', async () => {
    const t = setUp({
      answer: (req) => {
        t.sample({ bytes: 900, inodes: 10, partial: false }); // under: nothing happens
        expect(req.signal.aborted).toBe(false);
        t.sample({ bytes: 1500, inodes: 10, partial: false });
        return { kind: req.signal.aborted ? 'cancelled' : 'exited', output: 'writing' } as CommandOutcome;
      },
    });
    await expect(run(t.sut, 'yes > big')).rejects.toMatchObject({
      code: 'quota_exceeded',
      message: expect.stringMatching(/the command was killed.*\nwriting$/s),
    });
    t.sample({ bytes: 2000, inodes: 10, partial: false }); // no longer watched
    expect(t.workspaces.watch).toHaveBeenCalledTimes(1);
  });

  it('fails a command whose file write was stopped at the quota (SIGXFSZ), with its output', async () => {
    const { sut } = setUp({ answer: () => exited(153, 'File size limit exceeded') });
    await expect(run(sut, 'cat /dev/zero > f')).rejects.toMatchObject({
      code: 'quota_exceeded',
      message: expect.stringContaining('stopped at the 600 B left'),
    });
  });

  it('refuses every command while the sandbox failed its self-test, and says so on /readyz', async () => {
    const broken: SandboxStatus = { available: false, kind: 'bwrap', summary: 'bwrap: no user namespaces' };
    const { sut, runner, readiness, log } = setUp({ status: broken });
    await sut.onModuleInit();
    expect(readiness.note).toHaveBeenCalledWith('sandbox', expect.stringContaining('commands are REFUSED'));
    expect(log.error).toHaveBeenCalled();
    await expect(run(sut)).rejects.toEqual(
      new ToolError('unavailable', `${SANDBOX_UNAVAILABLE}: bwrap: no user namespaces`),
    );
    expect(runner.requests).toEqual([]);
  });

  it('runs unsandboxed only when SKALD_SANDBOX=none is configured, and warns loudly', async () => {
    const none: SandboxStatus = { available: true, kind: 'none', summary: 'NO SANDBOX' };
    await expect(run(setUp({ status: none, sandboxSetting: 'bwrap' }).sut)).rejects.toMatchObject({
      code: 'unavailable',
    });
    const t = setUp({ status: none, sandboxSetting: 'none' });
    await t.sut.onModuleInit();
    expect(t.log.warn).toHaveBeenCalledWith({ sandbox: 'none' }, '!!! NO SANDBOX !!!');
    expect(await run(t.sut)).toEqual({ result: 'ok\n[exit code: 0]' });
  });

  it("sends the command's live output to the session as tool_progress", async () => {
    const { sut, progress } = setUp({
      answer: (req) => {
        req.onOutput?.('stdout', Buffer.from('step 1\n'));
        return exited(0, 'step 1\n');
      },
    });
    await run(sut);
    expect(progress.publish).toHaveBeenCalledWith('u1', {
      type: 'tool_progress',
      session_id: 's1',
      tool_call_id: 'c1',
      stream: 'stdout',
      chunk: 'step 1\n',
    });
  });
});
