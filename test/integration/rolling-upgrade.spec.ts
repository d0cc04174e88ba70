/**
 * Rolling upgrades and restarts of the tool runner over a real NATS server, in both orders:
 * - a runner of the release before `tools.alive` (it answers `tools.exec` and sends no signs of
 *   life) under a worker of this release: a call longer than the loss window is waited for;
 * - a runner of this release under a worker of the release that watched for signs from the
 *   hand-over (5 s of silence from it or the last sign: lost): the runner's signs keep it waiting;
 * - a worker's requests while the only runner is stopped (drained) and started again, and while
 *   one of two replicas drains: every request is answered, none is lost or answered twice.
 */
import type { ToolContext } from '@skald/agent-loop';
import { ReplyDataOf, TOOL_ALIVE_LOSS_MS, topicOf } from '@skald/contracts';
import { Bus, NatsBus } from '@skald/messaging';
import { PrivateNats } from '@skald/testing';
import { RunnerToolSet } from '../../apps/session-worker/src/loop-adapters/runner-tool-set';
import { ToolsExecHandler } from '../../apps/tool-runner/src/exec/tools-exec.handler';
import type { ToolExecService } from '../../apps/tool-runner/src/exec/tool-exec.service';

jest.setTimeout(60_000);

const log = { warn: () => undefined, error: () => undefined };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Longer than the loss window: a worker that waits for signs it never gets gives the call up first. */
const LONG_CALL_MS = TOOL_ALIVE_LOSS_MS + 1_500;
const DONE: ReplyDataOf<'tools.exec'> = { status: 'done', result: 'slept', result_type: 'text' };

const ctx: ToolContext = {
  sessionId: '11111111-1111-4111-8111-111111111111',
  userId: '22222222-2222-4222-8222-222222222222',
  source: 'web',
  agentId: 'main',
  frameId: 'f',
  depth: 0,
  grants: [],
  runContext: { workingDirectory: null, systemPrompt: [] },
};
const call = (id: string) => ({
  toolCallId: id,
  name: 'execute_cmd',
  arguments: { command: 'sleep 6' },
  argumentsText: '{}',
});
const request = (id: string) => ({
  actor: { userId: ctx.userId, role: 'user' as const },
  session_id: ctx.sessionId,
  tool_call_id: id,
  name: 'execute_cmd',
  arguments: { command: 'sleep 6' },
  working_directory: null,
});

describe('tool runner and session worker upgraded in either order, and restarted', () => {
  let nats: PrivateNats;
  const buses: Bus[] = [];
  const connect = async (name: string, noResponderRetryMs?: number): Promise<Bus> => {
    const bus = await NatsBus.connect({ servers: nats.url, name, noResponderRetryMs }, log);
    buses.push(bus);
    return bus;
  };

  /** What a test started and the next one must not meet (run after each test, passed or failed). */
  const cleanups: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    nats = await PrivateNats.start();
  });
  afterEach(async () => {
    await Promise.all(cleanups.splice(0).map((c) => c().catch(() => undefined)));
  });
  afterAll(async () => {
    await Promise.all(buses.map((b) => b.drain().catch(() => undefined)));
    await nats?.destroy();
  });

  it('old runner (no tools.alive) + new worker: a call longer than the loss window gets its reply', async () => {
    const runner = await connect('old-runner');
    // The runner's edge before `tools.alive`: it answers the request, nothing else.
    runner.handle('tools.exec', async () => {
      await sleep(LONG_CALL_MS);
      return DONE;
    });
    const worker = await connect('new-worker', 15_000);
    const id = '33333333-3333-4333-8333-000000000001';
    // Gone before the next test whatever this one finds: it must not answer that test's request.
    cleanups.push(() => runner.drain());
    const started = Date.now();
    const result = await new RunnerToolSet(worker, 'user')
      .build(call(id), ctx)
      .run(new AbortController().signal, () => undefined);
    expect(result).toEqual({ ok: true, content: 'slept', resultType: 'text' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(LONG_CALL_MS);
  });

  it('new runner + old worker (gives a call up after 5 s without a sign from the hand-over or the last one): the call gets its reply', async () => {
    const runner = await connect('new-runner');
    const tools = {
      exec: async () => {
        await sleep(LONG_CALL_MS);
        return DONE;
      },
      cancel: () => undefined,
    } as unknown as ToolExecService;
    new ToolsExecHandler(runner, tools).onModuleInit();
    cleanups.push(() => runner.drain());
    const worker = await connect('old-worker');
    const id = '33333333-3333-4333-8333-000000000002';
    // The old worker's watch: subscribed from the hand-over, lost after 5 s without a sign.
    let lost = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => (lost = true), TOOL_ALIVE_LOSS_MS);
    };
    const sub = worker.subscribe(topicOf('toolAlive', id), arm);
    arm();
    const reply = await worker.call('tools.exec', request(id), { timeoutMs: 30_000 });
    clearTimeout(timer);
    sub.unsubscribe();
    expect({ reply, lost }).toEqual({ reply: DONE, lost: false });
  });

  it('the only runner stopped (drained) and started again 1.5 s later, and one of two replicas drained, under a stream of requests: every request answered once', async () => {
    const answered = new Map<string, number>();
    const startRunner = async (name: string): Promise<Bus> => {
      const bus = await connect(name);
      bus.handle('tools.exec', async (req) => {
        answered.set(req.tool_call_id, (answered.get(req.tool_call_id) ?? 0) + 1);
        await sleep(20);
        return DONE;
      });
      // The subscription is the server's before the first request is sent.
      await bus.nc.flush();
      return bus;
    };
    const worker = await connect('worker', 15_000);
    let first = await startRunner('runner-a');
    const sent: Array<Promise<unknown>> = [];
    const ids: string[] = [];
    const stream = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i++) {
        const id = `33333333-3333-4333-8333-${String(ids.length + 1).padStart(12, '0')}`;
        ids.push(id);
        sent.push(worker.call('tools.exec', request(id), { timeoutMs: 10_000 }));
        await sleep(10);
      }
    };
    const streaming = stream(300);
    await sleep(500);
    // A restart: drained (it stops answering first; nothing it took is lost), gone for 1.5 s, back.
    await first.drain();
    await sleep(1_500);
    first = await startRunner('runner-a2');
    const second = await startRunner('runner-b');
    await sleep(500);
    // A rolling upgrade: one of two replicas drains; the other answers.
    await first.drain();
    await streaming;
    const results = await Promise.allSettled(sent);
    const failed = results.filter((r) => r.status === 'rejected');
    expect({ sent: results.length, failed }).toEqual({ sent: 300, failed: [] });
    expect([...answered.values()].every((n) => n === 1)).toBe(true);
    expect(answered.size).toBe(300);
    await second.drain();
  });
});
