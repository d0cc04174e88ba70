/**
 * Execution enforces the offer: a call to a tool the round did not offer ends as `tool_error`
 * "tool X is not available to this agent", is never gated and never reaches the tool set, the
 * scheduler or the store's effects. One test per way a tool can be withheld.
 */
import fc from 'fast-check';
import { LOOP_TOOL_NAMES } from './loop-tools';
import type { AgentDefinition } from './ports';
import {
  agent,
  FakeGate,
  FakeMemory,
  InMemoryStore,
  LoopHarness,
  SimulatedCrash,
  type FakeToolDefinition,
  type RecordedLlmCall,
} from './testing';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const ok: FakeToolDefinition['run'] = async () => ({ ok: true, content: 'ran' });
const toolNames = (c: RecordedLlmCall): string[] => c.tools.map((t) => t.function.name);
/** An agent filter that denies these names (what the catalog compiles from `deny: [names]`). */
const denying = (names: readonly string[]): AgentDefinition['tools'] => ({ allows: (n) => !names.includes(n) });
const notAvailable = (name: string) => ({ status: 'failed', result: `tool ${name} is not available to this agent` });

/** The named call was refused and nothing acted on it. */
function expectRefused(h: LoopHarness, name: string): void {
  const row = h.toolCalls().find((c) => c.name === name);
  expect(row).toMatchObject(notAvailable(name));
  expect(h.tools.runsOf(name)).toEqual([]);
  expect(h.gate.checks.map((c) => c.name)).not.toContain(name);
  const errors = h.eventsOf('tool_error').filter((e) => e.tool_call_id === row!.id);
  expect(errors).toHaveLength(1);
}

describe('execution enforces the offer', () => {
  it("an agent's deny filter: read_file is neither offered nor run", async () => {
    const h = new LoopHarness({
      tools: [{ name: 'read_file', run: ok }],
      script: [{ toolCalls: [{ name: 'read_file', arguments: { path: 'secret' } }] }, { content: 'done' }],
    });
    h.catalog.add(agent({ id: 'main', type: 'chat', tools: denying(['read_file']) }));
    expect(await h.run('read it')).toMatchObject({ kind: 'final', content: 'done' });
    expect(toolNames(h.model.calls[0])).not.toContain('read_file');
    expectRefused(h, 'read_file');
  });

  it("an agent's allow list: a tool outside it is refused, one inside it runs", async () => {
    const h = new LoopHarness({
      tools: [
        { name: 'read_file', run: ok },
        { name: 'execute_cmd', run: ok },
      ],
      script: [
        {
          toolCalls: [
            { name: 'execute_cmd', arguments: { command: 'rm -rf /' } },
            { name: 'read_file', arguments: { path: 'a' } },
          ],
        },
        { content: 'done' },
      ],
    });
    h.catalog.add(agent({ id: 'main', type: 'chat', tools: { allows: (n) => n.startsWith('read_') } }));
    await h.run('go');
    expectRefused(h, 'execute_cmd');
    expect(h.tools.runsOf('read_file')).toHaveLength(1);
  });

  it('a root-only tool called by a sub-agent is refused', async () => {
    const h = new LoopHarness({
      agents: [agent({ id: 'worker' })],
      tools: [{ name: 'restart', rootAgentOnly: true, run: ok }],
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'worker', prompt: 'p' } }] },
        { toolCalls: [{ name: 'restart', arguments: {} }] },
        { content: 'child' },
        { content: 'root' },
      ],
    });
    await h.run('go');
    expect(toolNames(h.model.calls[1])).not.toContain('restart');
    expectRefused(h, 'restart');
  });

  it('a sub-agents-only tool called at the root is refused', async () => {
    const h = new LoopHarness({
      tools: [{ name: 'child_only', subAgentsOnly: true, run: ok }],
      script: [{ toolCalls: [{ name: 'child_only', arguments: {} }] }, { content: 'root' }],
    });
    await h.run('go');
    expect(toolNames(h.model.calls[0])).not.toContain('child_only');
    expectRefused(h, 'child_only');
  });

  it('a background session cannot start an async job: it is offered execute_subtask only', async () => {
    const h = new LoopHarness({
      session: { isInteractive: false },
      agents: [agent({ id: 'worker' })],
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'worker', prompt: 'bg', mode: 'async' } }] },
        { content: 'root' },
      ],
    });
    await h.run('go');
    expect(toolNames(h.model.calls[0])).toContain('execute_subtask');
    expectRefused(h, 'execute_task');
    expect(h.tasks.submitted).toEqual([]);
  });

  it('a sub-agent started with execute_task cannot call execute_task mode async', async () => {
    const h = new LoopHarness({
      agents: [agent({ id: 'worker' })],
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'worker', prompt: 'p' } }] },
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'worker', prompt: 'bg', mode: 'async' } }] },
        { content: 'child' },
        { content: 'root' },
      ],
    });
    expect(await h.run('go')).toMatchObject({ kind: 'final', content: 'root' });
    expect(toolNames(h.model.calls[1])).not.toContain('execute_task');
    expect(h.tasks.submitted).toEqual([]);
    const child = h.toolCalls().filter((c) => c.name === 'execute_task')[1];
    expect(child).toMatchObject(notAvailable('execute_task'));
    expect(h.frames()).toHaveLength(2);
  });

  it('a tool hidden by an unconditional Deny is neither offered nor run', async () => {
    const gate = new FakeGate();
    gate.hidden.add('execute_cmd');
    const h = new LoopHarness({
      gate,
      tools: [{ name: 'execute_cmd', run: ok }],
      script: [{ toolCalls: [{ name: 'execute_cmd', arguments: { command: 'id' } }] }, { content: 'done' }],
    });
    await h.run('go');
    expect(toolNames(h.model.calls[0])).not.toContain('execute_cmd');
    expectRefused(h, 'execute_cmd');
  });

  it("an unconditional Deny hides the loop's own tools too (delegation, activation, scratchpad)", async () => {
    const gate = new FakeGate();
    for (const n of ['execute_task', 'activate_tools', 'update_scratchpad']) gate.hidden.add(n);
    const h = new LoopHarness({
      gate,
      agents: [agent({ id: 'worker' })],
      toolGroups: ['github'],
      script: [
        {
          toolCalls: [
            { name: 'execute_task', arguments: { agent_id: 'worker', prompt: 'bg', mode: 'async' } },
            { name: 'activate_tools', arguments: { groups: ['github'] } },
            { name: 'update_scratchpad', arguments: { key: 'k', value: 'v' } },
          ],
        },
        { content: 'done' },
      ],
    });
    await h.run('go');
    const offered = toolNames(h.model.calls[0]);
    expect(offered).not.toEqual(expect.arrayContaining(['execute_task']));
    expect(offered).not.toContain('activate_tools');
    expect(offered).not.toContain('update_scratchpad');
    expect(offered).toContain('write_todos');
    for (const n of ['execute_task', 'activate_tools', 'update_scratchpad']) expectRefused(h, n);
    expect(h.tasks.submitted).toEqual([]);
    expect(h.frames()).toHaveLength(1);
    expect(h.store.view().scratchpads).toEqual({});
  });

  it('an MCP tool whose group is not activated is refused; after activation it runs', async () => {
    const h = new LoopHarness({
      tools: [{ name: 'mcp__github__issues', group: 'github', run: ok }],
      script: [
        { toolCalls: [{ name: 'mcp__github__issues', arguments: {} }] },
        // Same batch as the activation: the round that produced the call did not offer it.
        {
          toolCalls: [
            { name: 'activate_tools', arguments: { groups: ['github'] } },
            { name: 'mcp__github__issues', arguments: {} },
          ],
        },
        { toolCalls: [{ name: 'mcp__github__issues', arguments: {} }] },
        { content: 'done' },
      ],
    });
    await h.run('go');
    const rows = h.toolCalls().filter((c) => c.name === 'mcp__github__issues');
    expect(rows.map((r) => r.status)).toEqual(['failed', 'failed', 'done']);
    expect(rows[0]).toMatchObject(notAvailable('mcp__github__issues'));
    expect(h.tools.runsOf('mcp__github__issues')).toHaveLength(1);
  });

  it("the RunContext's enabled MCP servers are offered from the first round, in sub-agents too, without activate_tools", async () => {
    const h = new LoopHarness({
      session: { runContext: { workingDirectory: null, systemPrompt: [], enabledMcpServers: ['github'] } },
      agents: [
        agent({
          id: 'main',
          type: 'chat',
          prompt: 'You are the main agent.\n\nMCP servers:\n__MCP_SERVERS__',
          substitutions: {
            MCP_SERVERS:
              '- `github` (1 tool; activate_tools {"groups": ["github"]})\n- `jira` (1 tool; activate_tools {"groups": ["jira"]})',
          },
        }),
        agent({ id: 'worker' }),
      ],
      tools: [
        { name: 'mcp__github__issues', group: 'github', run: ok },
        { name: 'mcp__jira__tickets', group: 'jira', run: ok },
      ],
      toolGroups: ['github', 'jira'],
      script: [
        {
          toolCalls: [
            { name: 'mcp__github__issues', arguments: {} },
            { name: 'activate_tools', arguments: { groups: ['jira'] } },
          ],
        },
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'worker', prompt: 'p' } }] },
        { toolCalls: [{ name: 'mcp__github__issues', arguments: {} }] },
        { content: 'child' },
        { content: 'done' },
      ],
    });
    expect(await h.run('go')).toMatchObject({ kind: 'final', content: 'done' });
    const first = toolNames(h.model.calls[0]);
    expect(first).toContain('mcp__github__issues');
    expect(first).not.toContain('mcp__jira__tickets');
    expect(first).not.toContain('activate_tools');
    // the prompt's MCP list names the enabled servers as enabled, not how to activate (it is not offered)
    const system = JSON.stringify(h.model.calls[0].messages[0]);
    expect(system).toContain('`github` (enabled for this session: its tools are offered)');
    expect(system).not.toContain('activate_tools');
    expect(system).not.toContain('jira');
    expect(toolNames(h.model.calls[2])).toContain('mcp__github__issues');
    expect(h.tools.runsOf('mcp__github__issues')).toHaveLength(2);
    expectRefused(h, 'activate_tools');
    // the override is kept in memory: nothing is written as a grant
    expect(h.store.view().grants).toEqual({});
  });

  it('recovery checks a call that had not started against the offer recomputed now', async () => {
    const gate = new FakeGate();
    gate.hidden.add('execute_cmd');
    const h = new LoopHarness({
      gate,
      tools: [{ name: 'execute_cmd', run: ok }],
      script: [{ toolCalls: [{ name: 'execute_cmd', arguments: { command: 'id' } }] }, { content: 'done' }],
    });
    // The process dies after the rows were written `pending`, before the call was looked at.
    h.store.crashOn((m) => m.some((x) => x.kind === 'updateToolCall'));
    await expect(h.run('go')).rejects.toBeInstanceOf(SimulatedCrash);
    expect(h.toolCalls()[0].status).toBe('pending');
    const r = new LoopHarness({
      gate,
      store: InMemoryStore.fromSnapshot(h.store.snapshot()),
      tools: [{ name: 'execute_cmd', run: ok }],
      script: [{ content: 'done' }],
      idPrefix: 'b',
    });
    await r.recover();
    expectRefused(r, 'execute_cmd');
  });

  it('generated: whatever names the model sends, exactly the offered ones are gated and run', async () => {
    console.log(`offer property: seed=${SEED} — reproduce with FC_SEED=${SEED}`);
    const external = ['read_file', 'write_file', 'execute_cmd', 'restart', 'child_only', 'mcp__gh__issues'];
    const names = [...external, ...LOOP_TOOL_NAMES.filter((n) => n !== 'execute_task' && n !== 'execute_subtask')];
    const name = fc.oneof(
      fc.constantFrom(...names),
      fc.constantFrom(...names).map((n) => n.toUpperCase()),
      fc.constantFrom(...names).map((n) => `${n}_`),
      fc.stringMatching(/^[a-z_]{1,12}$/),
    );
    let cases = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(name, { minLength: 1, maxLength: 5 }),
        fc.subarray(external),
        fc.subarray(names),
        fc.boolean(),
        async (calls, hidden, denied, granted) => {
          cases++;
          const gate = new FakeGate();
          for (const n of hidden) gate.hidden.add(n);
          const h = new LoopHarness({
            gate,
            toolGroups: ['gh'],
            tools: [
              { name: 'read_file', run: ok },
              { name: 'write_file', run: ok },
              { name: 'execute_cmd', run: ok },
              { name: 'restart', rootAgentOnly: true, run: ok },
              { name: 'child_only', subAgentsOnly: true, run: ok },
              { name: 'mcp__gh__issues', group: 'gh', run: ok },
            ],
            script: [
              ...(granted ? [{ toolCalls: [{ name: 'activate_tools', arguments: { groups: ['gh'] } }] }] : []),
              {
                toolCalls: calls.map((n) => ({
                  name: n,
                  arguments: { key: 'k', value: 'v', todos: [], groups: ['gh'] },
                })),
              },
              { content: 'done' },
            ],
          });
          h.catalog.add(agent({ id: 'main', type: 'chat', tools: denying(denied) }));
          gate.hidden.delete('activate_tools');
          await h.run('go');
          const round = h.model.calls[granted ? 1 : 0];
          const offered = new Set(toolNames(round));
          const rows = h.toolCalls().slice(granted ? 1 : 0);
          expect(rows.map((r) => r.name)).toEqual(calls);
          for (const row of rows) {
            if (offered.has(row.name)) {
              expect(row.result).not.toBe(`tool ${row.name} is not available to this agent`);
            } else {
              expect(row).toMatchObject(notAvailable(row.name));
            }
          }
          const ran = h.tools.started.map((r) => r.name);
          for (const n of ran) expect(offered.has(n)).toBe(true);
          const gated = h.gate.checks.filter((c) => rows.some((r) => r.id === c.toolCallId)).map((c) => c.name);
          for (const n of gated) expect(offered.has(n)).toBe(true);
          for (const n of hidden) expect(offered.has(n)).toBe(false);
          for (const n of denied) expect(offered.has(n)).toBe(false);
          expect(offered.has('child_only')).toBe(false);
          const activated = granted && !denied.includes('activate_tools');
          expect(offered.has('mcp__gh__issues')).toBe(
            activated && !hidden.includes('mcp__gh__issues') && !denied.includes('mcp__gh__issues'),
          );
        },
      ),
      { seed: SEED, numRuns: 1000 },
    );
    expect(cases).toBe(1000);
  });
});

describe('the memory context follows the read tool', () => {
  const MEMORY = 'the user likes green tea';
  const sent = (c: RecordedLlmCall): string => JSON.stringify(c.messages);

  /** A root turn of two rounds (a call, then the answer) with a memory whose context needs read_file. */
  function harness(gate?: FakeGate, deny: string[] = []): LoopHarness {
    const h = new LoopHarness({
      ...(gate ? { gate } : {}),
      tools: [
        { name: 'read_file', run: ok },
        { name: 'list_files', run: ok },
      ],
      script: [{ toolCalls: [{ name: 'list_files', arguments: {} }] }, { content: 'done' }],
    });
    h.catalog.add(agent({ id: 'main', type: 'chat', tools: denying(deny) }));
    h.deps.memory = new FakeMemory(MEMORY, 'read_file');
    return h;
  }

  it('an agent offered read_file gets the memory context in every round', async () => {
    const h = harness();
    await h.run('what do I like?');
    expect(h.model.calls).toHaveLength(2);
    for (const c of h.model.calls) expect(sent(c)).toContain(MEMORY);
  });

  it("read_file withheld by the agent's filter: the memory context never reaches the model", async () => {
    const h = harness(undefined, ['read_file']);
    await h.run('what do I like?');
    expect(h.model.calls).toHaveLength(2);
    for (const c of h.model.calls) {
      expect(toolNames(c)).not.toContain('read_file');
      expect(sent(c)).not.toContain(MEMORY);
    }
  });

  it('read_file hidden by an unconditional Deny: the memory context never reaches the model', async () => {
    const gate = new FakeGate();
    gate.hidden.add('read_file');
    const h = harness(gate);
    await h.run('what do I like?');
    expect(h.model.calls).toHaveLength(2);
    for (const c of h.model.calls) expect(sent(c)).not.toContain(MEMORY);
  });
});
