import { TOOL_ALIVE_INTERVAL_MS } from '@skald/contracts';
import type { Bus } from '@skald/messaging/bus-port';
import { ToolsExecHandler } from './tools-exec.handler';
import type { ToolExecService } from './tool-exec.service';

/** The handler's signs of life, with a fake bus and a call the test ends. */
function setUp() {
  const handlers = new Map<string, (req: unknown) => Promise<unknown>>();
  const signs: Array<{ at: number; subject: string }> = [];
  const bus = {
    handle: (subject: string, fn: (req: unknown) => Promise<unknown>) => handlers.set(subject, fn),
    subscribe: () => ({ unsubscribe: () => undefined }),
    publish: (to: { subject: string }) => signs.push({ at: Date.now(), subject: to.subject }),
  } as unknown as Bus;
  let finish: (v: unknown) => void = () => undefined;
  const tools = { exec: () => new Promise((r) => (finish = r)), cancel: () => undefined } as unknown as ToolExecService;
  new ToolsExecHandler(bus, tools).onModuleInit();
  return { exec: handlers.get('tools.exec')!, signs, finish: (v: unknown) => finish(v) };
}

describe('ToolsExecHandler: signs of life', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0 }));
  afterEach(() => jest.useRealTimers());

  it('sends one on receipt (a runner killed at once is noticed), then every interval until the reply', async () => {
    const h = setUp();
    const reply = h.exec({ tool_call_id: 'c1' });
    expect(h.signs).toEqual([{ at: 0, subject: 'tools.alive.c1' }]);
    await jest.advanceTimersByTimeAsync(TOOL_ALIVE_INTERVAL_MS * 3);
    expect(h.signs.map((s) => s.at)).toEqual([0, 1, 2, 3].map((k) => k * TOOL_ALIVE_INTERVAL_MS));
    h.finish({ status: 'done' });
    await expect(reply).resolves.toEqual({ status: 'done' });
    await jest.advanceTimersByTimeAsync(TOOL_ALIVE_INTERVAL_MS * 3);
    expect(h.signs).toHaveLength(4);
  });
});
