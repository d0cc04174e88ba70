/**
 * ToolExecService with a faked router and the in-memory call records: what the worker gets back
 * for a tool that answers, fails, finds its approved preview stale, or is cancelled; an internal
 * error that never leaks its detail; a retried call answered once; a write answered from its
 * durable record by another replica; a call id reused for another call refused; no new call while
 * draining.
 */
import type { Logger } from '@skald/service-kit';
import { fake, newTestService } from '@skald/testing/unit';
import { LOGGER } from '../config';
import { StalePreview, ToolError } from '../tool-error';
import { InMemoryToolCallRecords, ToolCallRecords } from './tool-call-records';
import { ToolCancelled, ToolContext, ToolOutput } from './tool-context';
import { ToolExecRequest, ToolExecService } from './tool-exec.service';
import { ToolMetrics } from './tool-metrics';
import { ToolRouter } from './tool-router';

const log = (): Logger => {
  const l = { debug: jest.fn(), info: jest.fn(), warn: jest.fn(), error: jest.fn(), child: () => l };
  return l as unknown as Logger;
};

function setUp(
  route: (name: string, ctx: ToolContext, args: unknown) => Promise<ToolOutput>,
  records?: ToolCallRecords,
) {
  const t = newTestService(ToolExecService, [
    fake(LOGGER, log()),
    ...(records ? [fake(ToolCallRecords, records)] : []),
  ]);
  const router = t.mock(ToolRouter);
  router.route.mockImplementation(route);
  router.restartHint.mockReturnValue('markInterrupted');
  return { ...t, router, metrics: t.mock(ToolMetrics) };
}

let n = 0;
const request = (over: Partial<ToolExecRequest> = {}): ToolExecRequest => ({
  actor: { userId: 'u1', role: 'user' },
  session_id: 's1',
  tool_call_id: `call-${++n}`,
  name: 'write_file',
  arguments: { path: 'a.txt', content: 'x' },
  ...over,
});

describe('ToolExecService', () => {
  it("answers a tool's result with the file it changed, run in the session's working directory", async () => {
    const { sut, router, metrics } = setUp(() =>
      Promise.resolve({ result: 'wrote a.txt', fileChanged: '/workspace/src/a.txt' }),
    );
    const reply = await sut.exec(request({ working_directory: '/workspace/src', expected_base_hash: 'h1' }));
    expect(reply).toEqual({
      status: 'done',
      result: 'wrote a.txt',
      result_type: 'text',
      file_changed: '/workspace/src/a.txt',
    });
    expect(router.route.mock.calls[0][1]).toMatchObject({
      userId: 'u1',
      sessionId: 's1',
      workdir: '/workspace/src',
      expectedBaseHash: 'h1',
    });
    expect(metrics.finished).toHaveBeenCalledWith('write_file', 'done', expect.any(Number));
  });

  it("answers a tool's error as failed, and an internal error without its detail", async () => {
    const failing = setUp(() => Promise.reject(new ToolError('not_found', 'a.txt does not exist')));
    expect(await failing.sut.exec(request())).toEqual({ status: 'failed', error: 'a.txt does not exist' });
    const crashing = setUp(() => Promise.reject(new Error('pg: password authentication failed')));
    expect(await crashing.sut.exec(request())).toEqual({
      status: 'failed',
      error: 'write_file failed with an internal error',
    });
  });

  it('answers stale when the approved preview no longer matches, and runs the same call again later', async () => {
    let stale = true;
    const { sut, router } = setUp(() =>
      stale ? Promise.reject(new StalePreview('/workspace/a.txt')) : Promise.resolve({ result: 'wrote' }),
    );
    const req = request();
    expect(await sut.exec(req)).toEqual({
      status: 'stale',
      error: '/workspace/a.txt changed since the preview that was approved; nothing was written',
    });
    stale = false;
    expect(await sut.exec(req)).toMatchObject({ status: 'done', result: 'wrote' });
    expect(router.route).toHaveBeenCalledTimes(2);
  });

  it('answers a retried call with the first result, running it once', async () => {
    const { sut, router, metrics } = setUp(() => Promise.resolve({ result: 'appended' }));
    const req = request({ name: 'append_file' });
    const first = await sut.exec(req);
    expect(await sut.exec(req)).toEqual(first);
    expect(router.route).toHaveBeenCalledTimes(1);
    expect(metrics.replayed).toHaveBeenCalledTimes(1);
  });

  it('answers a write another replica finished from its durable record, without running it', async () => {
    const records = new InMemoryToolCallRecords();
    const req = request();
    await setUp(() => Promise.resolve({ result: 'wrote once' }), records).sut.exec(req);
    const other = setUp(() => Promise.resolve({ result: 'wrote twice' }), records);
    expect(await other.sut.exec(req)).toMatchObject({ result: 'wrote once' });
    expect(other.router.route).not.toHaveBeenCalled();
  });

  it("refuses a call id already used for another user's call", async () => {
    const records = new InMemoryToolCallRecords();
    const req = request();
    await setUp(() => Promise.resolve({ result: 'ok' }), records).sut.exec(req);
    const other = setUp(() => Promise.resolve({ result: 'ok' }), records);
    await expect(other.sut.exec({ ...req, actor: { userId: 'u2', role: 'user' } })).rejects.toThrow(
      `tool call ${req.tool_call_id} was already run as a different call`,
    );
    expect(other.router.route).not.toHaveBeenCalled();
  });

  it('answers cancelled when the call is cancelled while it runs', async () => {
    const req = request({ name: 'execute_cmd', arguments: { command: 'sleep 100' } });
    let started: () => void = () => undefined;
    const running = new Promise<void>((r) => (started = r));
    const { sut } = setUp(
      (_name, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(new ToolCancelled()));
          started();
        }),
    );
    const reply = sut.exec(req);
    await running;
    expect(sut.running).toBe(1);
    sut.cancel(req.tool_call_id);
    expect(await reply).toEqual({ status: 'cancelled' });
    expect(sut.running).toBe(0);
  });

  it('takes no new call while draining (the caller retries elsewhere)', async () => {
    const { sut, router } = setUp(() => Promise.resolve({ result: 'ok' }));
    await sut.drain(0);
    await expect(sut.exec(request())).rejects.toThrow('this tool runner is shutting down; retry the call');
    expect(router.route).not.toHaveBeenCalled();
  });
});
