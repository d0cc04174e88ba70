import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { ExecuteCmdService } from '../command/execute-cmd.service';
import { PlainCommandRunner } from '../command/plain-command.runner';
import { workspaceFixture, WorkspaceFixture, tp } from '../testing-fixtures/workspace-fixture';
import { InMemoryToolCallRecords } from './tool-call-records';
import { INTERRUPTED_AFTER_START, ToolExecRequest, ToolExecService } from './tool-exec.service';
import { ToolMetrics } from './tool-metrics';
import { ToolRouter } from './tool-router';

describe('ToolExecService: durable results by tool call id', () => {
  let fx: WorkspaceFixture;
  let runner: PlainCommandRunner;
  let records: InMemoryToolCallRecords;
  const log = pino({ level: 'silent' });

  const service = (instance: string) =>
    new ToolExecService(
      new ToolRouter(fx.files, new ExecuteCmdService({ SKALD_SANDBOX: 'none' }, fx.workspaces, runner, log)),
      new ToolMetrics(),
      runner,
      log,
      records,
      instance,
      { pollMs: 10, staleAfterMs: 1_000 },
    );
  const request = (name: string, args: Record<string, unknown>, id = randomUUID()): ToolExecRequest => ({
    actor: { userId: fx.userId, role: 'user' },
    session_id: randomUUID(),
    tool_call_id: id,
    name,
    arguments: args,
  });

  beforeEach(async () => {
    fx = await workspaceFixture();
    runner = new PlainCommandRunner();
    records = new InMemoryToolCallRecords();
  });
  afterEach(async () => {
    runner.onApplicationShutdown();
    await fx.cleanup();
  });

  it('records the start before running and the reply after, and a restarted runner replays it', async () => {
    const req = request('append_file', { path: 'a.txt', content: 'x\n' });
    const first = await service('r1').exec(req);
    expect(records.rows.get(req.tool_call_id)?.reply).toEqual(first);
    expect(await service('r2').exec(req)).toEqual(first);
    expect(await fx.files.readFile(fx.ctx(), { path: tp('a.txt') })).toEqual({ result: '     1\tx' });
  });

  it('answers interrupted for a markInterrupted call a dead runner started, without running it', async () => {
    const req = request('execute_cmd', { command: 'echo ran > ran.txt' });
    await records.claim(
      { toolCallId: req.tool_call_id, userId: fx.userId, sessionId: req.session_id, toolName: 'execute_cmd' },
      'dead',
      1_000,
    );
    (records.rows.get(req.tool_call_id) as { heartbeat: number }).heartbeat = Date.now() - 60_000;
    expect(await service('r2').exec(req)).toEqual({ status: 'failed', error: INTERRUPTED_AFTER_START });
    await expect(fx.files.readFile(fx.ctx(), { path: tp('ran.txt') })).rejects.toThrow(/no such file/);
  });

  it('refuses to start (unavailable) when the start cannot be recorded', async () => {
    records.claim = () => Promise.reject(new Error('db down'));
    await expect(service('r1').exec(request('write_file', { path: 'w.txt', content: 'x' }))).rejects.toMatchObject({
      code: 'unavailable',
    });
    await expect(fx.files.readFile(fx.ctx(), { path: tp('w.txt') })).rejects.toThrow(/no such file/);
  });
});
