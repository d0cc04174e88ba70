import type { ToolContext } from '@skald/agent-loop';
import type { Bus } from '@skald/messaging';
import { RunnerToolSet } from './runner-tool-set';
import { TurnFacts } from './turn-facts';

const ctx: ToolContext = {
  sessionId: '00000000-0000-4000-8000-0000000000aa',
  userId: '00000000-0000-4000-8000-0000000000bb',
  source: 'web',
  agentId: 'main',
  frameId: '00000000-0000-4000-8000-0000000000cc',
  depth: 0,
  grants: [],
  runContext: { workingDirectory: null, systemPrompt: [], allowFsReads: [], allowFsWrites: [] },
  securityGroup: null,
};

/** A bus that answers visible_tools with every offered tool and tools.exec with `done`, counting requests. */
function fakeBus(): { bus: Bus; asked: Record<string, number> } {
  const asked: Record<string, number> = {};
  const bus = {
    call: (subject: string, req: { tools?: string[] }) => {
      asked[subject] = (asked[subject] ?? 0) + 1;
      if (subject === 'approval.visible_tools') return Promise.resolve({ visible: req.tools ?? [] });
      if (subject === 'tools.exec') return Promise.resolve({ status: 'done', result: 'ok', result_type: 'text' });
      return Promise.reject(new Error(`unexpected ${subject}`));
    },
    publish: () => undefined,
  } as unknown as Bus;
  return { bus, asked };
}

const run = (tools: RunnerToolSet, name: string, args: Record<string, unknown>) =>
  tools
    .build({ toolCallId: '00000000-0000-4000-8000-0000000000dd', name, arguments: args } as never, ctx)
    .run(new AbortController().signal, () => undefined);

describe('RunnerToolSet: the visible tools, once per turn', () => {
  it('asks the approval service once per turn while the calls only read', async () => {
    const { bus, asked } = fakeBus();
    const tools = new RunnerToolSet(bus, 'user', undefined, new TurnFacts());
    for (let round = 0; round < 5; round++) {
      expect((await tools.definitions(ctx)).length).toBeGreaterThan(0);
      await run(tools, 'read_file', { path: 'a.txt' });
    }
    expect(asked['approval.visible_tools']).toBe(1);
    expect(asked['tools.exec']).toBe(5);
  });

  it('asks again after a call that may have written, and for another set of grants', async () => {
    const { bus, asked } = fakeBus();
    const tools = new RunnerToolSet(bus, 'user', undefined, new TurnFacts());
    await tools.definitions(ctx);
    await run(tools, 'write_file', { path: 'a.txt', content: 'x' });
    await tools.definitions(ctx);
    await tools.definitions({ ...ctx, agentId: 'other' });
    expect(asked['approval.visible_tools']).toBe(3);
  });

  it('a new turn asks again', async () => {
    const { bus, asked } = fakeBus();
    await new RunnerToolSet(bus, 'user', undefined, new TurnFacts()).definitions(ctx);
    await new RunnerToolSet(bus, 'user', undefined, new TurnFacts()).definitions(ctx);
    expect(asked['approval.visible_tools']).toBe(2);
  });
});
