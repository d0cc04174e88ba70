/**
 * What the worker offers is the registry: every built-in tool (memory_search included), with the
 * JSON schema generated from its arguments; the loop's own tools are the ones the registry lists.
 */
import { isLoopTool, LOOP_TOOL_NAMES, type ToolContext } from '@skald/agent-loop';
import { BUILTIN_TOOLS, LOOP_TOOLS, SYNTHETIC_TOOLS } from '@skald/contracts';
import type { Bus } from '@skald/messaging/bus-port';
import { NatsGate } from './nats-gate';
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
  runContext: { workingDirectory: null, systemPrompt: [] },
  securityGroup: null,
};

/** A bus whose runner never answers: the offer is the whole registry. */
const silentBus = {
  call: () => Promise.reject(new Error('no request expected')),
  publish: () => undefined,
} as unknown as Bus;

/** A bus whose runner has no search backend, counting what it is asked. */
function runnerWithoutSearch() {
  const asked: string[] = [];
  const bus = {
    call: (subject: string) => {
      asked.push(subject);
      return Promise.resolve({ groups: [], tools: [], unavailable_builtins: ['web_search'] });
    },
    publish: () => undefined,
  } as unknown as Bus;
  return { bus, asked };
}

describe('RunnerToolSet × registry', () => {
  it('offers every built-in tool, memory_search included, with its generated schema', async () => {
    const specs = await new RunnerToolSet(silentBus, 'user').definitions(ctx);
    expect(specs.map((s) => s.definition.function.name)).toEqual(BUILTIN_TOOLS.map((t) => t.name));
    expect(specs.map((s) => s.definition.function.name)).toContain('memory_search');
    const grep = specs.find((s) => s.definition.function.name === 'grep_files')!;
    const props = (grep.definition.function.parameters as { properties: Record<string, { description?: string }> })
      .properties;
    expect(props.case_sensitive.description).toBe('Case sensitive (default true)');
    for (const s of specs) {
      const def = BUILTIN_TOOLS.find((t) => t.name === s.definition.function.name)!;
      expect(s.rootAgentOnly ?? false).toBe(!def.offeredAt.subAgents);
      expect(s.subAgentsOnly ?? false).toBe(!def.offeredAt.root);
    }
  });

  it('offers no tool the runner cannot run, asking it once for many rounds with no MCP grant', async () => {
    const { bus, asked } = runnerWithoutSearch();
    for (let round = 0; round < 5; round++) {
      const names = (await new RunnerToolSet(bus, 'user').definitions(ctx)).map((s) => s.definition.function.name);
      expect(names).not.toContain('web_search');
      expect(names).toContain('web_fetch');
    }
    expect(asked).toEqual(['mcp.catalog']);
    // a round with a grant asks for its tools (and learns the same again)
    await new RunnerToolSet(bus, 'user').definitions({ ...ctx, grants: ['github'] });
    expect(asked).toEqual(['mcp.catalog', 'mcp.catalog']);
  });

  it('builds every built-in tool with the registry’s restart hint and concurrency', () => {
    const set = new RunnerToolSet(silentBus, 'user');
    for (const t of BUILTIN_TOOLS) {
      const exec = set.build({ toolCallId: 'c', name: t.name, arguments: {}, argumentsText: '{}' }, ctx);
      expect([t.name, exec.restartHint, exec.concurrencySafe]).toEqual([t.name, t.restartHint, t.concurrencySafe]);
    }
  });

  it("names the same loop tools as the agent loop, and no built-in tool is also the loop's", () => {
    const listed = [...LOOP_TOOLS, ...SYNTHETIC_TOOLS].map((t) => t.name);
    for (const n of LOOP_TOOL_NAMES) expect(listed).toContain(n);
    for (const t of LOOP_TOOLS) expect(isLoopTool(t.name)).toBe(true);
    for (const t of BUILTIN_TOOLS) expect(isLoopTool(t.name)).toBe(false);
  });
});

/** A bus that answers visible_tools with every offered tool and tools.exec with `done`, counting requests. */
function countingBus(): { bus: Bus; asked: Record<string, number> } {
  const asked: Record<string, number> = {};
  const bus = {
    call: (subject: string, req: { tools?: string[] }) => {
      asked[subject] = (asked[subject] ?? 0) + 1;
      if (subject === 'approval.visible_tools') return Promise.resolve({ visible: req.tools ?? [] });
      if (subject === 'tools.exec') return Promise.resolve({ status: 'done', result: 'ok', result_type: 'text' });
      return Promise.reject(new Error(`unexpected ${subject}`));
    },
    publish: () => undefined,
    subscribe: () => ({ unsubscribe: () => undefined }),
  } as unknown as Bus;
  return { bus, asked };
}

describe('the visible tools, once per turn (TurnFacts shared by the gate and the tool set)', () => {
  const names = BUILTIN_TOOLS.map((t) => t.name);
  const visibility = (agentId: string) => ({
    userId: ctx.userId,
    sessionId: ctx.sessionId,
    agentId,
    source: ctx.source,
    securityGroup: null,
    names,
  });
  const run = (tools: RunnerToolSet, name: string, args: Record<string, unknown>) =>
    tools
      .build({ toolCallId: '00000000-0000-4000-8000-0000000000dd', name, arguments: args, argumentsText: '' }, ctx)
      .run(new AbortController().signal, () => undefined);

  it('asks the approval service once per turn while the calls only read', async () => {
    const { bus, asked } = countingBus();
    const facts = new TurnFacts();
    const gate = new NatsGate(bus, 'user', undefined, facts);
    const tools = new RunnerToolSet(bus, 'user', undefined, facts);
    for (let round = 0; round < 5; round++) {
      expect((await gate.visibleTools(visibility(ctx.agentId)))?.size).toBe(names.length);
      await run(tools, 'read_file', { path: 'a.txt' });
    }
    expect(asked['approval.visible_tools']).toBe(1);
    expect(asked['tools.exec']).toBe(5);
  });

  it('asks again after a call that may have written, and for another agent', async () => {
    const { bus, asked } = countingBus();
    const facts = new TurnFacts();
    const gate = new NatsGate(bus, 'user', undefined, facts);
    const tools = new RunnerToolSet(bus, 'user', undefined, facts);
    await gate.visibleTools(visibility(ctx.agentId));
    await run(tools, 'write_file', { path: 'a.txt', content: 'x' });
    await gate.visibleTools(visibility(ctx.agentId));
    await gate.visibleTools(visibility('other'));
    expect(asked['approval.visible_tools']).toBe(3);
  });

  it('a new turn asks again', async () => {
    const { bus, asked } = countingBus();
    await new NatsGate(bus, 'user', undefined, new TurnFacts()).visibleTools(visibility(ctx.agentId));
    await new NatsGate(bus, 'user', undefined, new TurnFacts()).visibleTools(visibility(ctx.agentId));
    expect(asked['approval.visible_tools']).toBe(2);
  });
});
