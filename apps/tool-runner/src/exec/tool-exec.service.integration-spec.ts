import { expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createLogger } from '@skald/service-kit/logger';
import { ExecuteCmdService, SANDBOX_UNAVAILABLE } from '../command/execute-cmd.service';
import { PlainCommandRunner } from '../command/plain-command.runner';
import { workspaceFixture, WorkspaceFixture } from '../testing-fixtures/workspace-fixture';
import { InMemoryToolCallRecords } from './tool-call-records';
import { ToolExecRequest, ToolExecService } from './tool-exec.service';
import { ToolMetrics } from './tool-metrics';
import { MEMORY_UNAVAILABLE, ToolRouter } from './tool-router';

describe('ToolExecService', () => {
  let fx: WorkspaceFixture;
  let runner: PlainCommandRunner;
  const log = pino({ level: 'silent' });

  function service(sandbox: 'bwrap' | 'none'): ToolExecService {
    const commands = new ExecuteCmdService({ SKALD_SANDBOX: sandbox }, fx.workspaces, runner, log);
    return new ToolExecService(new ToolRouter(fx.files, commands), new ToolMetrics(), runner, log);
  }
  const request = (
    name: string,
    args: Record<string, unknown>,
    over: Partial<ToolExecRequest> = {},
  ): ToolExecRequest => ({
    actor: { userId: fx.userId, role: 'user' },
    session_id: randomUUID(),
    tool_call_id: randomUUID(),
    name,
    arguments: args,
    ...over,
  });

  beforeEach(async () => {
    fx = await workspaceFixture();
    runner = new PlainCommandRunner();
  });
  afterEach(async () => {
    runner.onApplicationShutdown();
    await fx.cleanup();
  });

  it('routes file tools by name and reports file_changed', async () => {
    const tools = service('bwrap');
    expect(
      await tools.exec(request('write_file', { path: 'a.txt', content: 'x\n', workdir: '/workspace/sub' })),
    ).toEqual({
      status: 'done',
      result: 'Created /workspace/sub/a.txt (2 bytes)',
      result_type: 'text',
      file_changed: '/workspace/sub/a.txt',
    });
    expect(await tools.exec(request('read_file', { path: 'sub/a.txt' }))).toEqual({
      status: 'done',
      result: '     1\tx',
      result_type: 'text',
    });
  });

  // A read that succeeded is the routine call (five a turn in a typical tool loop): its line is at
  // debug, its count and time are in the metrics. Every other call keeps its info line.
  it("logs a successful read's 'tool call finished' at debug, every other call at info", async () => {
    const lines: Array<{ level: number; msg: string; tool: string; status: string }> = [];
    const logged = pino({ level: 'debug' }, { write: (l: string) => lines.push(JSON.parse(l) as (typeof lines)[0]) });
    const commands = new ExecuteCmdService({ SKALD_SANDBOX: 'none' }, fx.workspaces, runner, logged);
    const tools = new ToolExecService(new ToolRouter(fx.files, commands), new ToolMetrics(), runner, logged);
    await tools.exec(request('write_file', { path: 'a.txt', content: 'x\n' }));
    await tools.exec(request('read_file', { path: 'a.txt' }));
    await tools.exec(request('read_file', { path: 'missing.txt' }));
    await tools.exec(request('list_files', { path: '.' }));
    const finished = lines
      .filter((l) => l.msg === 'tool call finished')
      .map((l) => [l.tool, l.status, pino.levels.labels[l.level]]);
    expect(finished).toEqual([
      ['write_file', 'done', 'info'],
      ['read_file', 'done', 'debug'],
      ['read_file', 'failed', 'info'],
      ['list_files', 'done', 'debug'],
    ]);
  });

  it("every line of a call names the request's user, session, turn and call (a replay and a durable record too)", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const out = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    const logged = createLogger('tool-runner', 'debug', 't1', out);
    const records = new InMemoryToolCallRecords();
    const commands = new ExecuteCmdService({ SKALD_SANDBOX: 'none' }, fx.workspaces, runner, logged);
    const runnerOf = (instance: string) =>
      new ToolExecService(new ToolRouter(fx.files, commands), new ToolMetrics(), runner, logged, records, instance);
    const tools = runnerOf('r1');
    const turnId = randomUUID();
    const calls = [
      request('write_file', { path: 'a.txt', content: 'x\n' }, { turn_id: turnId }),
      request('read_file', { path: 'a.txt' }, { turn_id: turnId }),
      request('read_file', { path: 'missing.txt' }, { turn_id: turnId }),
      request('execute_cmd', { command: 'true' }, { turn_id: turnId }),
    ];
    for (const c of calls) await tools.exec(c);
    await tools.exec(calls[0]); // a duplicate, answered with its result
    await runnerOf('r2').exec(calls[3]); // another runner: answered from the durable record
    const ofCall = (l: Record<string, unknown>) => calls.find((c) => c.tool_call_id === l.toolCallId);
    expect(lines.map((l) => l.msg)).toEqual(
      expect.arrayContaining([
        'tool call finished',
        'duplicate tool call answered with its result',
        'tool call answered from its durable record',
      ]),
    );
    for (const l of lines) {
      const c = ofCall(l);
      expect(c).toBeDefined();
      expect(l).toMatchObject({
        userId: c!.actor.userId,
        sessionId: c!.session_id,
        turnId,
        toolCallId: c!.tool_call_id,
      });
    }
  });

  it('answers failures as the sentence the model reads', async () => {
    const tools = service('bwrap');
    expect(await tools.exec(request('read_file', { path: '../x' }))).toEqual({
      status: 'failed',
      error: 'path is outside the workspace (/workspace): ../x',
    });
    expect(await tools.exec(request('read_file', { path: 'a', workdir: '/etc' }))).toEqual({
      status: 'failed',
      error: 'workdir is outside the workspace (/workspace): /etc',
    });
    expect(await tools.exec(request('nope', {}))).toEqual({ status: 'failed', error: 'unknown tool: nope' });
    expect(await tools.exec(request('mcp__gh__search', {}))).toEqual({
      status: 'failed',
      error: 'MCP tools are not available on this tool runner (mcp__gh__search)',
    });
  });

  it('routes memory paths away from the workspace (refused when the runner has no memory store)', async () => {
    const tools = service('bwrap');
    expect(await tools.exec(request('memory_search', { query: 'x' }))).toEqual({
      status: 'failed',
      error: MEMORY_UNAVAILABLE,
    });
    const write = await tools.exec(request('write_file', { path: 'shared-memory/x.md', content: 'x' }));
    expect(write).toEqual({ status: 'failed', error: MEMORY_UNAVAILABLE });
    await expect(readFile(join(fx.home, 'shared-memory', 'x.md'))).rejects.toThrow(/ENOENT/);
  });

  it('runs a duplicate tool_call_id once and returns the same reply', async () => {
    const tools = service('bwrap');
    const req = request('append_file', { path: 'log.txt', content: 'line\n' });
    const [a, b] = await Promise.all([tools.exec(req), tools.exec(req)]);
    const c = await tools.exec(req);
    expect(a).toEqual(b);
    expect(c).toEqual(a);
    expect(await readFile(join(fx.home, 'log.txt'), 'utf8')).toBe('line\n');
    await expect(tools.exec({ ...req, actor: { userId: randomUUID(), role: 'user' } })).rejects.toMatchObject({
      code: 'conflict',
    });
  });

  it('ends a call cancelled before it arrived as cancelled, without running it', async () => {
    const tools = service('bwrap');
    const req = request('write_file', { path: 'never.txt', content: 'x' });
    tools.cancel(req.tool_call_id);
    expect(await tools.exec(req)).toEqual({ status: 'cancelled' });
    await expect(readFile(join(fx.home, 'never.txt'))).rejects.toThrow(/ENOENT/);
  });

  describe('execute_cmd', () => {
    it('is refused (fail closed) without a sandbox', async () => {
      expect(await service('bwrap').exec(request('execute_cmd', { command: 'touch /tmp/should-not-exist' }))).toEqual({
        status: 'failed',
        error: SANDBOX_UNAVAILABLE,
      });
    });

    it('with SKALD_SANDBOX=none runs sh -c in the working directory with a clean environment and reports the exit code', async () => {
      process.env.SKALD_TEST_SECRET = 'do-not-leak';
      try {
        const tools = service('none');
        await tools.exec(request('write_file', { path: 'sub/f.txt', content: 'x' }));
        const reply = await tools.exec(
          request('execute_cmd', {
            command: 'pwd; ls; echo "secret=$SKALD_TEST_SECRET"; echo err >&2; exit 3',
            workdir: '/workspace/sub',
          }),
        );
        expect(reply).toEqual({
          status: 'done',
          result_type: 'text',
          result: `${join(fx.home, 'sub')}\nf.txt\nsecret=\nerr\n[exit code: 3]`,
        });
      } finally {
        delete process.env.SKALD_TEST_SECRET;
      }
    });

    it('kills the process group on timeout and returns the output so far', async () => {
      const started = Date.now();
      const reply = await service('none').exec(
        request('execute_cmd', { command: 'echo started; sleep 30 & sleep 30', timeout: 1 }),
      );
      expect(reply).toEqual({ status: 'failed', error: 'timed out after 1 s\nstarted\n' });
      expect(Date.now() - started).toBeLessThan(5000);
    });

    it('kills the command on tools.cancel', async () => {
      const tools = service('none');
      const req = request('execute_cmd', { command: 'sleep 30' });
      const pending = tools.exec(req);
      await new Promise((r) => setTimeout(r, 200));
      tools.cancel(req.tool_call_id);
      expect(await pending).toEqual({ status: 'cancelled' });
    });

    it('caps unbounded output while reading it', async () => {
      const reply = await service('none').exec(request('execute_cmd', { command: 'yes | head -c 1000000' }));
      expect(reply.status).toBe('done');
      const result = (reply as { result: string }).result;
      expect(result).toContain(`[output truncated: ${1_000_000 - 100 * 1024} bytes omitted]`);
      expect(result.length).toBeLessThan(110 * 1024);
      expect(result).toMatch(/\[exit code: 0\]$/);
    });

    it('refuses a timeout outside 1–600 s', async () => {
      const reply = await service('none').exec(request('execute_cmd', { command: 'true', timeout: 601 }));
      expect(reply).toMatchObject({
        status: 'failed',
        error: expect.stringMatching(/^execute_cmd: invalid arguments: timeout/),
      });
    });
  });
});
