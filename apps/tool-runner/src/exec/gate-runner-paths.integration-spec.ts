import { randomUUID } from 'node:crypto';
import { readFile, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { isLoopMemoryPath } from '@skald/agent-loop';
import { effectiveCallPaths, isMemoryPath } from '@skald/contracts';
import { ExecuteCmdService } from '../command/execute-cmd.service';
import { PlainCommandRunner } from '../command/plain-command.runner';
import { workspaceFixture, WorkspaceFixture } from '../testing-fixtures/workspace-fixture';
import { ToolExecRequest, ToolExecService } from './tool-exec.service';
import { ToolMetrics } from './tool-metrics';
import { MEMORY_UNAVAILABLE, ToolRouter } from './tool-router';

/**
 * The gate judges `effectiveCallPaths` (approval-service `callPaths` is that function, see
 * rule-engine.paths.spec.ts); this file proves the tool runner touches exactly that path, on disk
 * (the kernel resolves the host path of the gate's answer and finds this call's bytes there).
 */
const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.log(`gate/runner path differential: seed ${SEED} (FC_SEED=${SEED} replays)`);

describe('gate path = runner path', () => {
  let fx: WorkspaceFixture;
  let runner: PlainCommandRunner;
  let tools: ToolExecService;
  let n = 0;
  const log = pino({ level: 'silent' });

  const request = (name: string, args: Record<string, unknown>, wd: string | null): ToolExecRequest => ({
    actor: { userId: fx.userId, role: 'user' },
    session_id: randomUUID(),
    tool_call_id: randomUUID(),
    name,
    arguments: args,
    working_directory: wd,
  });

  beforeAll(async () => {
    fx = await workspaceFixture();
    runner = new PlainCommandRunner();
    const commands = new ExecuteCmdService({ SKALD_SANDBOX: 'none' }, fx.workspaces, runner, log);
    tools = new ToolExecService(new ToolRouter(fx.files, commands), new ToolMetrics(), runner, log);
  });
  afterAll(async () => {
    runner.onApplicationShutdown();
    await fx.cleanup();
  });

  /** Writes through the runner and checks the kernel finds the bytes where the gate said. */
  async function writeAgrees(path: string, workdir: unknown, wd: string | null): Promise<void> {
    const token = `t${n++}-${randomUUID()}`;
    const args: Record<string, unknown> = { path, content: token, ...(workdir === undefined ? {} : { workdir }) };
    const [gate] = effectiveCallPaths('write_file', args, wd);
    const reply = await tools.exec(request('write_file', args, wd));
    if (!gate.ok) {
      expect(reply).toEqual({ status: 'failed', error: gate.message });
      return;
    }
    if (gate.value.kind === 'memory') {
      expect(reply).toEqual({ status: 'failed', error: MEMORY_UNAVAILABLE });
      return;
    }
    expect(reply).toMatchObject({ status: 'done', file_changed: gate.value.virtual });
    const host = join(fx.home, ...gate.value.segments);
    expect(await realpath(host)).toBe(join(await realpath(fx.home), ...gate.value.segments));
    expect(await readFile(host, 'utf8')).toBe(token);
  }

  it.each([
    // [path, workdir argument, session working directory]
    ['a.txt', undefined, null],
    ['a.txt', undefined, '/workspace/proj'],
    ['a.txt', '/workspace/other', '/workspace/proj'],
    ['a.txt', 'sub', '/workspace/proj'],
    ['../b.txt', undefined, '/workspace/proj'],
    ['./c.txt', '..', '/workspace/proj/deep'],
    ['/workspace/abs.txt', '/workspace/other', '/workspace/proj'],
    ['./user-memory/x.md', undefined, '/workspace/proj'],
    ['a/../user-memory/x.md', undefined, null],
    ['user-memory/../x.md', undefined, null],
    ['/workspace/user-memory/x.md', undefined, null],
    ['../../etc/passwd', undefined, '/workspace/proj'],
    ['a.txt', '/etc', null],
    ['a.txt', undefined, '/etc'],
    ['a.txt', 'user-memory', null],
    ['a\0b', undefined, null],
  ])('write_file %j (workdir %j, session %j)', (path, workdir, wd) => writeAgrees(path, workdir, wd));

  const segment = fc.constantFrom('a', 'b', 'sub', '.', '..', '', 'user-memory', 'shared-memory', 'x y', 'ü');
  const dirPart = fc.array(segment, { maxLength: 6 }).map((s) => s.join('/'));
  const wdArb = fc.oneof(
    fc.constant(null),
    dirPart.map((p) => `/workspace/${p}`),
    dirPart,
  );
  const workdirArb = fc.oneof(
    fc.constant(undefined),
    dirPart,
    dirPart.map((p) => `/workspace/${p}`),
  );

  /**
   * The properties are bounded by their run counts; the timeout only catches a hang. 200 writes
   * through the runner (each with its workspace lock and landing walk) took up to 30 s beside the
   * other unit and integration workers on 2 cores (fresh-clone CI at e29aa4e).
   */
  const HANG_GUARD_MS = 120_000;

  it(
    'write_file: generated paths, workdirs and session directories agree (kernel differential)',
    async () => {
      let runs = 0;
      await fc.assert(
        fc.asyncProperty(dirPart, fc.boolean(), workdirArb, wdArb, async (dir, absolute, workdir, wd) => {
          runs++;
          // A fresh file name each run: a file never collides with a directory of an earlier run.
          const file = `f${n}.txt`;
          const path = absolute ? `/workspace/${dir}/${file}` : dir === '' ? file : `${dir}/${file}`;
          await writeAgrees(path, workdir, wd);
        }),
        { seed: SEED, numRuns: 200 },
      );
      expect(runs).toBe(200);
    },
    HANG_GUARD_MS,
  );

  it(
    'execute_cmd runs in the directory the gate judged (pwd -P differential)',
    async () => {
      const home = await realpath(fx.home);
      await fc.assert(
        fc.asyncProperty(workdirArb, wdArb, async (workdir, wd) => {
          const args: Record<string, unknown> = { command: 'pwd -P', ...(workdir === undefined ? {} : { workdir }) };
          const [gate] = effectiveCallPaths('execute_cmd', args, wd);
          if (gate.ok && gate.value.kind === 'workspace') {
            // the directory must exist for a command to run in it
            await tools.exec(request('write_file', { path: `${gate.value.virtual}/.keep`, content: '' }, null));
          }
          const reply = await tools.exec(request('execute_cmd', args, wd));
          if (!gate.ok || gate.value.kind !== 'workspace') {
            expect(reply.status).toBe('failed');
            if (!gate.ok) expect(reply).toEqual({ status: 'failed', error: gate.message });
            return;
          }
          expect(reply).toEqual({
            status: 'done',
            result_type: 'text',
            result: `${join(home, ...gate.value.segments)}\n[exit code: 0]`,
          });
        }),
        { seed: SEED, numRuns: 40 },
      );
    },
    HANG_GUARD_MS,
  );

  it('the loop recognises memory paths exactly as the resolver does (no working-directory rewrite of memory)', () => {
    const any = fc.oneof(
      dirPart,
      dirPart.map((p) => `./${p}`),
      fc.string(),
    );
    fc.assert(
      fc.property(any, (p) => {
        if (p.includes('\0')) return;
        expect(isLoopMemoryPath(p)).toBe(isMemoryPath(p));
      }),
      { seed: SEED, numRuns: 5000 },
    );
  });
});
