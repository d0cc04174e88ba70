import { agent, LoopHarness, type RecordedLlmCall, type ScriptStep } from './testing';

const toolNames = (c: RecordedLlmCall): string[] => c.tools.map((t) => t.function.name);
const systemOf = (c: RecordedLlmCall): string => {
  const s = c.messages[0].content;
  return typeof s === 'string' ? s : s?.[0] && 'text' in s[0] ? s[0].text : '';
};

describe('sub-agents', () => {
  it('a sub-agent’s token deltas carry its depth; the root agent’s carry depth 0', async () => {
    const h = new LoopHarness({
      agents: [agent({ id: 'researcher', prompt: 'You research.' })],
      script: [
        {
          content: 'Asking.',
          deltas: ['Ask', 'ing.'],
          toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'researcher', prompt: 'find X' } }],
        },
        { content: 'X is 42', deltas: ['X is', ' 42'] },
        { content: 'It is 42.', deltas: ['It is 42.'] },
      ],
    });
    await h.run('what is X?');
    const seen = h.sink.events.map((e) => (e.type === 'token_delta' ? [e.depth, e.offset, e.delta] : null));
    expect(seen).toEqual([
      [0, 0, 'Ask'],
      [0, 3, 'ing.'],
      [1, 0, 'X is'],
      [1, 4, ' 42'],
      [0, 0, 'It is 42.'],
    ]);
  });

  it('a sub-agent is a tool: a child frame runs a normal loop as its own agent and its answer is the call result', async () => {
    const h = new LoopHarness({
      agents: [agent({ id: 'researcher', prompt: 'You research.' })],
      tools: [{ name: 'read_file', run: async () => ({ ok: true, content: 'file text' }) }],
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'researcher', prompt: 'find X' } }] },
        { toolCalls: [{ name: 'read_file', arguments: { path: 'x' } }] },
        { content: 'X is 42' },
        { content: 'The researcher says X is 42.' },
      ],
    });
    const outcome = await h.run('what is X?');
    expect(outcome).toMatchObject({ kind: 'final', content: 'The researcher says X is 42.' });
    expect(h.model.calls.map(systemOf)).toEqual([
      'You are the main agent.',
      'You research.',
      'You research.',
      'You are the main agent.',
    ]);
    expect(h.model.calls[1].messages[1]).toEqual({ role: 'user', content: 'find X' });
    const child = h.frames().find((f) => f.depth === 1)!;
    expect(child).toMatchObject({ agentId: 'researcher', status: 'closed' });
    const parentCall = h.toolCalls()[0];
    expect(parentCall).toMatchObject({
      name: 'execute_task',
      status: 'done',
      result: 'X is 42',
      childFrameId: child.id,
    });
    expect(h.eventsOf('agent_start')[0]).toMatchObject({
      stack_id: child.id,
      parent_tool_call_id: parentCall.id,
      agent_id: 'researcher',
      parent_agent_id: 'main',
      depth: 1,
      prompt_preview: 'find X',
    });
    expect(h.eventsOf('agent_done')[0]).toMatchObject({ stack_id: child.id, result_preview: 'X is 42' });
    expect(h.eventsOf('done')).toHaveLength(1);
    expect(h.eventTypes()).toEqual([
      'user_message',
      'tool_start',
      'agent_start',
      'tool_start',
      'tool_done',
      'agent_done',
      'tool_done',
      'done',
    ]);
  });

  it('depth is at most 5: the deepest agent is not offered execute_subtask and a call to it is refused', async () => {
    const steps: ScriptStep[] = [];
    for (let d = 0; d < 5; d++) {
      steps.push({
        toolCalls: [
          {
            name: d === 0 ? 'execute_task' : 'execute_subtask',
            arguments: { agent_id: 'worker', prompt: `level ${d + 1}` },
          },
        ],
      });
    }
    steps.push({ toolCalls: [{ name: 'execute_subtask', arguments: { agent_id: 'worker', prompt: 'level 6' } }] });
    steps.push(
      { content: 'bottom' },
      { content: 'd4' },
      { content: 'd3' },
      { content: 'd2' },
      { content: 'd1' },
      { content: 'root' },
    );
    const h = new LoopHarness({ agents: [agent({ id: 'worker' })], script: steps });
    const outcome = await h.run('go deep');
    expect(outcome).toMatchObject({ kind: 'final', content: 'root' });
    expect(Math.max(...h.frames().map((f) => f.depth))).toBe(5);
    expect(toolNames(h.model.calls[5])).not.toContain('execute_subtask');
    const tooDeep = h.toolCalls().find((c) => c.argumentsText.includes('level 6'))!;
    expect(tooDeep).toMatchObject({ status: 'failed', result: 'tool execute_subtask is not available to this agent' });
    expect(h.frames()).toHaveLength(6);
    expect(h.frames().every((f) => f.depth === 0 || f.status === 'closed')).toBe(true);
  });

  it('strips root_agent_only tools and adds ask_user_clarification / execute_subtask once per level (names unique)', async () => {
    const h = new LoopHarness({
      agents: [agent({ id: 'worker' })],
      tools: [
        { name: 'restart', rootAgentOnly: true, run: async () => ({ ok: true, content: '' }) },
        { name: 'child_only', subAgentsOnly: true, run: async () => ({ ok: true, content: '' }) },
        { name: 'read_file', run: async () => ({ ok: true, content: '' }) },
      ],
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'worker', prompt: 'p' } }] },
        { toolCalls: [{ name: 'execute_subtask', arguments: { agent_id: 'worker', prompt: 'p2' } }] },
        { content: 'grandchild' },
        { content: 'child' },
        { content: 'root' },
      ],
    });
    await h.run('go');
    const [root, child, grandchild] = h.model.calls.map(toolNames);
    expect(root).toEqual([
      'restart',
      'read_file',
      'update_scratchpad',
      'write_todos',
      'activate_tools',
      'list_agents',
      'ask_user_clarification',
      'execute_task',
    ]);
    expect(child).toEqual([
      'child_only',
      'read_file',
      'update_scratchpad',
      'write_todos',
      'activate_tools',
      'list_agents',
      'ask_user_clarification',
      'execute_subtask',
    ]);
    expect(grandchild).toEqual(child);
    for (const names of [root, child, grandchild]) expect(new Set(names).size).toBe(names.length);
  });

  it('applies the agent tool filters and offers no ask_user_clarification to system agents', async () => {
    const h = new LoopHarness({
      tools: [
        { name: 'read_file', run: async () => ({ ok: true, content: '' }) },
        { name: 'mcp__gh__issue', run: async () => ({ ok: true, content: '' }) },
      ],
      script: [{ content: 'ok' }],
    });
    h.catalog.add(
      agent({
        id: 'main',
        type: 'system',
        // as the catalog compiles { allow: ['read_*', 'mcp__*', 'list_agents'], deny: ['mcp__gh__*'] }
        tools: {
          allows: (n) =>
            !n.startsWith('mcp__gh__') && (n.startsWith('read_') || n.startsWith('mcp__') || n === 'list_agents'),
        },
      }),
    );
    await h.run('tick');
    expect(toolNames(h.model.calls[0])).toEqual(['read_file', 'list_agents']);
  });

  it('never inherits the model: args client → agent client → AUTO by strength', async () => {
    const h = new LoopHarness({
      session: { pinnedClient: 'root-pin' },
      agents: [agent({ id: 'fast', strength: 'fast' }), agent({ id: 'own', client: 'own-client', strength: 'strong' })],
      script: [
        {
          toolCalls: [
            { name: 'execute_task', arguments: { agent_id: 'fast', prompt: 'a' } },
            { name: 'execute_task', arguments: { agent_id: 'own', prompt: 'b' } },
            { name: 'execute_task', arguments: { agent_id: 'own', prompt: 'c', client: 'arg-client' } },
          ],
        },
        { content: '1' },
        { content: '2' },
        { content: '3' },
        { content: 'root' },
      ],
    });
    h.deps.config.maxParallelCalls = 1;
    await h.run('go');
    expect(h.model.selections.map((s) => [s.agentId, s.pinned, s.strength])).toEqual([
      ['main', 'root-pin', null],
      ['fast', null, 'fast'],
      ['own', 'own-client', 'strong'],
      ['own', 'arg-client', 'strong'],
      ['main', 'root-pin', null],
    ]);
  });

  it('a batch of ≥2 sync delegations runs its children concurrently and records them in call order', async () => {
    const order: string[] = [];
    const h: LoopHarness = new LoopHarness({
      agents: [agent({ id: 'a', prompt: 'A' }), agent({ id: 'b', prompt: 'B' })],
      script: (req) => {
        const sys = systemOf(req);
        if (sys === 'A') {
          return { content: 'from a', before: () => order.push('a') };
        }
        if (sys === 'B') return { content: 'from b', before: () => order.push('b') };
        const answered = req.messages.filter((m) => m.role === 'tool').length;
        return answered === 0
          ? {
              toolCalls: [
                { name: 'execute_task', arguments: { agent_id: 'a', prompt: 'pa' } },
                { name: 'execute_task', arguments: { agent_id: 'b', prompt: 'pb' } },
              ],
            }
          : { content: 'both done' };
      },
    });
    await h.run('fan out');
    expect(h.eventTypes()).toEqual([
      'user_message',
      'tool_start',
      'tool_start',
      'agent_start',
      'agent_start',
      'agent_done',
      'tool_done',
      'agent_done',
      'tool_done',
      'done',
    ]);
    expect(h.eventsOf('tool_done').map((e) => e.result)).toEqual(['from a', 'from b']);
    expect(
      h
        .frames()
        .filter((f) => f.depth === 1)
        .every((f) => f.status === 'closed'),
    ).toBe(true);
  });

  it('a child that runs out of rounds fails the parent call; an unknown agent fails it without a frame', async () => {
    const h = new LoopHarness({
      config: { maxToolRounds: 2 },
      agents: [agent({ id: 'loopy' })],
      tools: [{ name: 'ping', run: async () => ({ ok: true, content: 'pong' }) }],
      script: [
        {
          toolCalls: [
            { name: 'execute_task', arguments: { agent_id: 'loopy', prompt: 'p' } },
            { name: 'execute_task', arguments: { agent_id: 'ghost', prompt: 'p' } },
          ],
        },
        { toolCalls: [{ name: 'ping' }] },
        { toolCalls: [{ name: 'ping' }] },
        { content: 'root done' },
      ],
    });
    h.deps.config.maxParallelCalls = 1;
    expect((await h.run('go')).kind).toBe('final');
    const [loopy, ghost] = h.toolCalls().filter((c) => c.name === 'execute_task');
    expect(loopy).toMatchObject({
      status: 'failed',
      result: 'Sub-agent loopy used all 2 tool rounds without a final answer.',
    });
    expect(ghost).toMatchObject({
      status: 'failed',
      result: 'Unknown agent `ghost`. Call list_agents.',
      childFrameId: null,
    });
  });

  it('mode async submits through the task port and returns the receipt at once', async () => {
    const h = new LoopHarness({
      agents: [agent({ id: 'bg' })],
      script: [
        {
          toolCalls: [
            { name: 'execute_task', arguments: { agent_id: 'bg', prompt: 'long job', mode: 'async', title: 'Job' } },
          ],
        },
        { content: 'started' },
      ],
    });
    await h.run('go');
    const [call] = h.toolCalls();
    expect(h.tasks.submitted).toEqual([
      expect.objectContaining({
        idempotencyKey: call.id,
        parentToolCallId: call.id,
        agentId: 'bg',
        prompt: 'long job',
        title: 'Job',
        scratchpadSessionId: 'session-1',
      }),
    ]);
    expect(call.status).toBe('done');
    expect(call.result).toContain('job-1');
    expect(h.frames()).toHaveLength(1);
  });

  it('mode async without a task port fails clearly', async () => {
    const h = new LoopHarness({
      agents: [agent({ id: 'bg' })],
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'bg', prompt: 'x', mode: 'async' } }] },
        { content: 'ok' },
      ],
    });
    delete h.deps.tasks;
    await h.run('go');
    expect(h.toolCalls()[0]).toMatchObject({
      status: 'failed',
      result: 'Async tasks are not available here; use mode sync.',
    });
  });

  it('list_agents returns task agents only', async () => {
    const h = new LoopHarness({
      agents: [
        agent({ id: 'coder', description: 'writes code', strength: 'strong' }),
        agent({ id: 'tic', type: 'system' }),
      ],
      script: [{ toolCalls: [{ name: 'list_agents' }] }, { content: 'ok' }],
    });
    await h.run('who?');
    expect(JSON.parse(h.toolCalls()[0].result!)).toEqual([
      { id: 'coder', name: 'coder', description: 'writes code', strength: 'strong' },
    ]);
  });
});

describe('who can be a sub-agent', () => {
  it('only task agents: the chat and system agents are refused with a sentence, and the scope reaches client selection', async () => {
    const h = new LoopHarness({
      agents: [
        agent({ id: 'tic', type: 'system' }),
        agent({ id: 'software-engineer', scope: 'coding', prompt: 'You code.' }),
      ],
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'main', prompt: 'x' } }] },
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'tic', prompt: 'x' } }] },
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'software-engineer', prompt: 'fix' } }] },
        { content: 'fixed' },
        { content: 'all done' },
      ],
    });
    await h.run('go');
    const [toMain, toTic, toEngineer] = h.toolCalls();
    expect(toMain).toMatchObject({
      status: 'failed',
      result: '`main` is not a task agent and cannot run as a sub-agent. Call list_agents for the task agents.',
    });
    expect(toTic).toMatchObject({ status: 'failed' });
    expect(toEngineer).toMatchObject({ status: 'done', result: 'fixed' });
    expect(h.model.selections.map((s) => s.scope)).toEqual([null, null, null, 'coding', null]);
  });
});
