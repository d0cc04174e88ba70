/**
 * What the worker offers is the registry: every built-in tool (memory_search included), with the
 * JSON schema generated from its arguments; the loop's own tools are the ones the registry lists.
 */
import { isLoopTool, LOOP_TOOL_NAMES, type ToolContext } from '@skald/agent-loop';
import { BUILTIN_TOOLS, LOOP_TOOLS, SYNTHETIC_TOOLS } from '@skald/contracts';
import type { Bus } from '@skald/messaging';
import { RunnerToolSet } from './runner-tool-set';

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

/** A bus that must not be asked anything (no MCP grants: the offer needs no request). */
const silentBus = {
  call: () => Promise.reject(new Error('no request expected')),
  publish: () => undefined,
} as unknown as Bus;

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
