import { CallNotAwaitingHumanError } from './errors';
import {
  FakeGate,
  FakeHuman,
  InMemoryStore,
  LoopHarness,
  SimulatedCrash,
  agent,
  type HarnessOptions,
  type ScriptStep,
} from './testing';
import type { Mutation, SessionEventDraft } from './types';

/** A fresh process: new objects around a store rebuilt from the committed snapshot. */
function restart(h: LoopHarness, options: HarnessOptions): LoopHarness {
  return new LoopHarness({
    ...options,
    store: InMemoryStore.fromSnapshot(h.store.snapshot()),
    idPrefix: 'b',
    callIdPrefix: 'r_',
  });
}

const hasEvent = (type: SessionEventDraft['type']) => (_m: Mutation[], e: SessionEventDraft[]) =>
  e.some((x) => x.type === type);

describe('recovery', () => {
  it('reaps an interrupted parallel batch: spawning calls failed, frames closed, the root continues', async () => {
    const agents = [agent({ id: 'a', prompt: 'A' }), agent({ id: 'b', prompt: 'B' })];
    const batch = {
      toolCalls: [
        { name: 'execute_task', arguments: { agent_id: 'a', prompt: 'pa' } },
        { name: 'execute_task', arguments: { agent_id: 'b', prompt: 'pb' } },
      ],
    };
    const tools = [{ name: 'read_file', run: async () => ({ ok: true as const, content: 'x' }) }];
    const h = new LoopHarness({
      agents,
      tools,
      script: (req) =>
        req.messages[0].content === 'You are the main agent.'
          ? batch
          : { toolCalls: [{ name: 'read_file', arguments: { path: 'p' } }] },
    });
    h.store.crashOn(hasEvent('tool_done'));
    await expect(h.run('fan out')).rejects.toBeInstanceOf(SimulatedCrash);
    expect(h.store.view().frames.filter((f) => f.status === 'active')).toHaveLength(3);

    const r = restart(h, { agents, tools, script: [{ content: 'Both helpers were lost; retrying later.' }] });
    const outcome = await r.recover();
    expect(outcome).toMatchObject({ kind: 'final', content: 'Both helpers were lost; retrying later.' });
    expect(
      r
        .frames()
        .filter((f) => f.depth === 1)
        .map((f) => f.status),
    ).toEqual(['closed', 'closed']);
    const spawning = r.toolCalls().filter((c) => c.name === 'execute_task');
    expect(spawning.map((c) => c.status)).toEqual(['failed', 'failed']);
    expect(r.tools.started).toHaveLength(0);
    expect(spawning[0].result).toMatch(/interrupted by a restart while running in a parallel batch/);
    expect(r.model.calls).toHaveLength(1);
    expect(r.model.calls[0].messages[0].content).toBe('You are the main agent.');
  });

  it('re-runs a Running call unless its restart hint is markInterrupted', async () => {
    const tools = (log: string[]) => [
      {
        name: 'read_file',
        concurrencySafe: false,
        run: async () => (log.push('read'), { ok: true as const, content: 'text' }),
      },
      {
        name: 'execute_cmd',
        restartHint: 'markInterrupted' as const,
        run: async () => (log.push('cmd'), { ok: true as const, content: 'ran' }),
      },
    ];
    const first: string[] = [];
    const h = new LoopHarness({
      tools: tools(first),
      script: [
        {
          toolCalls: [
            { name: 'read_file', arguments: { path: 'a' } },
            { name: 'execute_cmd', arguments: { command: 'make' } },
          ],
        },
      ],
    });
    // crash right after each side effect, before its record
    let k = 0;
    h.store.crashOn((_m, e) => e.some((x) => x.type === 'tool_done') && ++k === 2);
    await expect(h.run('go')).rejects.toBeInstanceOf(SimulatedCrash);
    expect(first).toEqual(['read', 'cmd']);
    expect(h.store.view().toolCalls.map((c) => c.status)).toEqual(['done', 'running']);

    const second: string[] = [];
    const r = restart(h, { tools: tools(second), script: [{ content: 'Check whether make finished.' }] });
    expect((await r.recover()).kind).toBe('final');
    expect(second).toEqual([]);
    const cmd = r.toolCalls()[1];
    expect(cmd.status).toBe('interrupted');
    // Stored like a failed call's error (without the prefix): what the debug tree shows as `result`.
    expect(cmd.result).toBe(
      'tool call was interrupted by a restart after it started; it may or may not have taken effect. Check the current state before retrying.',
    );
    expect(r.model.calls[0].messages).toContainEqual({
      role: 'tool',
      tool_call_id: cmd.llmCallId,
      content:
        'Error: tool call was interrupted by a restart after it started; it may or may not have taken effect. Check the current state before retrying.',
    });

    const h2 = new LoopHarness({
      tools: tools([]),
      script: [{ toolCalls: [{ name: 'read_file', arguments: { path: 'a' } }] }],
    });
    h2.store.crashOn(hasEvent('tool_done'));
    await expect(h2.run('go')).rejects.toBeInstanceOf(SimulatedCrash);
    const again: string[] = [];
    const r2 = restart(h2, { tools: tools(again), script: [{ content: 'ok' }] });
    await r2.recover();
    expect(again).toEqual(['read']);
    expect(r2.toolCalls()[0].status).toBe('done');
  });

  it('re-asks an AwaitingHuman call with the same request id', async () => {
    const gate = new FakeGate({ execute_cmd: { kind: 'require' } });
    const tools = [{ name: 'execute_cmd', run: async () => ({ ok: true as const, content: 'ok' }) }];
    const h = new LoopHarness({
      gate,
      tools,
      human: new FakeHuman(['wait']),
      script: [{ toolCalls: [{ name: 'execute_cmd', arguments: { command: 'ls' } }] }],
    });
    const stop = new AbortController();
    const run = h.run('go', stop.signal).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 5));
    h.store.crashAfterCommits(h.store.commitCount); // the process dies while waiting
    stop.abort();
    expect(await run).toBeInstanceOf(SimulatedCrash);
    const requestId = h.store.view().toolCalls[0].requestId;
    expect(requestId).toBeTruthy();

    const r = restart(h, {
      gate,
      tools,
      human: new FakeHuman([{ kind: 'approved' }]),
      script: [{ content: 'listed' }],
    });
    expect(await r.recover()).toMatchObject({ kind: 'final', content: 'listed' });
    expect(r.human.requests).toEqual([expect.objectContaining({ requestId, kind: 'approval' })]);
    expect(r.eventsOf('pending_write').map((e) => e.request_id)).toEqual([requestId, requestId]);
    expect(r.tools.started).toHaveLength(1);
  });

  it('un-wedges a finished child without calling the model for it, then continues the parent', async () => {
    const agents = [agent({ id: 'helper', prompt: 'HELPER' })];
    const h = new LoopHarness({
      agents,
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'helper', prompt: 'p' } }] },
        { content: 'helper result' },
      ],
    });
    h.store.crashOn(hasEvent('agent_done'));
    await expect(h.run('go')).rejects.toBeInstanceOf(SimulatedCrash);
    const r = restart(h, { agents, script: [{ content: 'root got it' }] });
    expect(await r.recover()).toMatchObject({ kind: 'final', content: 'root got it' });
    expect(r.model.calls).toHaveLength(1);
    expect(r.model.calls[0].messages[0].content).toBe('You are the main agent.');
    expect(r.toolCalls()[0]).toMatchObject({ status: 'done', result: 'helper result' });
    expect(r.frames().find((f) => f.depth === 1)?.status).toBe('closed');
    expect(r.eventsOf('agent_done')).toHaveLength(1);
  });

  it('cascades to the root with each frame running as its own agent', async () => {
    const agents = [agent({ id: 'mid', prompt: 'MID' }), agent({ id: 'leaf', prompt: 'LEAF' })];
    const tools = [{ name: 'read_file', run: async () => ({ ok: true as const, content: 'data' }) }];
    const h = new LoopHarness({
      agents,
      tools,
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'mid', prompt: 'm' } }] },
        { toolCalls: [{ name: 'execute_subtask', arguments: { agent_id: 'leaf', prompt: 'l' } }] },
        { toolCalls: [{ name: 'read_file', arguments: { path: 'x' } }] },
      ],
    });
    h.store.crashOn(hasEvent('tool_done'));
    await expect(h.run('go')).rejects.toBeInstanceOf(SimulatedCrash);
    const r = restart(h, {
      agents,
      tools,
      script: [{ content: 'leaf answer' }, { content: 'mid answer' }, { content: 'root answer' }],
    });
    expect(await r.recover()).toMatchObject({ kind: 'final', content: 'root answer' });
    expect(r.model.calls.map((c) => c.messages[0].content)).toEqual(['LEAF', 'MID', 'You are the main agent.']);
    expect(r.tools.started).toHaveLength(1);
    expect(
      r
        .frames()
        .filter((f) => f.depth > 0)
        .every((f) => f.status === 'closed'),
    ).toBe(true);
    expect(
      r
        .toolCalls()
        .filter((c) => c.name.startsWith('execute_'))
        .map((c) => c.result),
    ).toEqual(['mid answer', 'leaf answer']);
  });

  it('never re-runs Cancelled or Rejected calls', async () => {
    const gate = new FakeGate((req) =>
      (req.arguments as { n: number }).n === 1 ? { kind: 'deny', reason: 'no' } : { kind: 'allow' },
    );
    const tools = [{ name: 'op', run: async () => ({ ok: true as const, content: 'ran' }) }];
    const h = new LoopHarness({
      gate,
      tools,
      script: [{ toolCalls: [1, 2, 3].map((n) => ({ name: 'op', arguments: { n } })) }],
    });
    // the second call is cancelled by a stop that the crash makes the process forget
    const stop = new AbortController();
    h.tools.add({
      name: 'op',
      run: async (args) =>
        (args as { n: number }).n === 2 ? (stop.abort(), new Promise(() => undefined)) : { ok: true, content: 'ran' },
    });
    h.store.crashOn(hasEvent('error'));
    await expect(h.run('go', stop.signal)).rejects.toBeInstanceOf(SimulatedCrash);
    expect(h.store.view().toolCalls.map((c) => c.status)).toEqual(['rejected', 'cancelled', 'cancelled']);
    const r = restart(h, { gate: new FakeGate(), tools, script: [{ content: 'ok' }] });
    await r.recover();
    expect(r.tools.started).toHaveLength(0);
    expect(r.gate.checks).toHaveLength(0);
    expect(r.toolCalls().map((c) => c.status)).toEqual(['rejected', 'cancelled', 'cancelled']);
  });

  it('recoverTurn on a finished session is idle and calls nothing', async () => {
    const h = new LoopHarness({ script: [{ content: 'hi' }] });
    await h.run('hello');
    expect(await h.recover()).toEqual({ kind: 'idle' });
    expect(h.model.calls).toHaveLength(1);
  });

  it('recoverTurn answers an input that entered before the crash', async () => {
    const h = new LoopHarness({ script: [] });
    h.store.crashOn((m) => m.some((x) => x.kind === 'appendMessage' && x.message.role === 'assistant'));
    h.model.push({ content: 'lost' });
    await expect(h.run('question')).rejects.toBeInstanceOf(SimulatedCrash);
    const r = restart(h, { script: [{ content: 'answer' }] });
    expect(await r.recover()).toMatchObject({ kind: 'final', content: 'answer' });
    expect(r.eventsOf('done')).toHaveLength(1);
  });

  it('runTurn first recovers the unfinished turn, so new input never orphans earlier input', async () => {
    const tools = [{ name: 'read_file', run: async () => ({ ok: true as const, content: 'x' }) }];
    const h = new LoopHarness({ tools, script: [{ toolCalls: [{ name: 'read_file', arguments: { path: 'a' } }] }] });
    h.store.crashOn(hasEvent('tool_done'));
    await expect(h.run('first')).rejects.toBeInstanceOf(SimulatedCrash);
    const r = restart(h, { tools, script: [{ content: 'answer to first' }, { content: 'answer to second' }] });
    const outcome = await r.run('second');
    expect(outcome).toMatchObject({ kind: 'final', content: 'answer to second' });
    expect(r.messages().map((m) => [m.role, m.content, m.status])).toEqual([
      ['user', 'first', 'ok'],
      ['assistant', '', 'ok'],
      ['assistant', 'answer to first', 'ok'],
      ['user', 'second', 'ok'],
      ['assistant', 'answer to second', 'ok'],
    ]);
    expect(r.eventsOf('done').map((e) => e.content)).toEqual(['answer to first', 'answer to second']);
  });
});

describe('resolvePendingCall', () => {
  const tools = [{ name: 'execute_cmd', run: async () => ({ ok: true as const, content: 'built' }) }];
  const parkedSession = async (): Promise<{ h: LoopHarness; callId: string }> => {
    const h = new LoopHarness({
      gate: new FakeGate({ execute_cmd: { kind: 'require' } }),
      human: new FakeHuman([{ kind: 'park' }]),
      tools,
      script: [{ toolCalls: [{ name: 'execute_cmd', arguments: { command: 'make' } }] }],
    });
    expect((await h.run('build')).kind).toBe('parked');
    return { h, callId: h.toolCalls()[0].id };
  };

  it('approved: runs the call with the gate skipped, then continues the turn', async () => {
    const { h, callId } = await parkedSession();
    const r = restart(h, {
      gate: new FakeGate({ execute_cmd: { kind: 'deny', reason: 'would deny' } }),
      tools,
      script: [{ content: 'built it' }],
    });
    expect(await r.resolve(callId, { kind: 'approved' })).toMatchObject({ kind: 'final', content: 'built it' });
    expect(r.gate.checks).toHaveLength(0);
    expect(r.tools.started).toHaveLength(1);
    expect(r.toolCalls()[0]).toMatchObject({ status: 'done', result: 'built' });
    expect((await r.store.getSession(r.sessionId)).turnState).toBe('finished');
  });

  it('rejected: records the rejection sentence and continues', async () => {
    const { h, callId } = await parkedSession();
    const r = restart(h, { tools, script: [{ content: 'ok, not building' }] });
    await r.resolve(callId, { kind: 'rejected', note: 'too slow' });
    expect(r.tools.started).toHaveLength(0);
    expect(r.toolCalls()[0]).toMatchObject({
      status: 'rejected',
      result: 'User rejected this tool call. Reason: too slow',
    });
  });

  it('cancelled: the call is cancelled and the turn ends Cancelled', async () => {
    const { h, callId } = await parkedSession();
    const r = restart(h, { tools, script: [] });
    expect(await r.resolve(callId, { kind: 'cancelled' })).toEqual({ kind: 'cancelled' });
    expect(r.toolCalls()[0].status).toBe('cancelled');
    expect(r.eventsOf('error')[0].code).toBe('interrupted');
  });

  it('a second answer is a conflict', async () => {
    const { h, callId } = await parkedSession();
    h.model.push({ content: 'done' });
    await h.resolve(callId, { kind: 'approved' });
    await expect(h.resolve(callId, { kind: 'approved' })).rejects.toBeInstanceOf(CallNotAwaitingHumanError);
    await expect(h.resolve('nope', { kind: 'approved' })).rejects.toBeInstanceOf(CallNotAwaitingHumanError);
  });

  it('continues a parked sub-agent: the child finishes, then the parent', async () => {
    const agents = [agent({ id: 'ops', prompt: 'OPS' })];
    const h = new LoopHarness({
      agents,
      gate: new FakeGate({ execute_cmd: { kind: 'require' } }),
      human: new FakeHuman([{ kind: 'park' }]),
      tools,
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'ops', prompt: 'deploy' } }] },
        { toolCalls: [{ name: 'execute_cmd', arguments: { command: 'deploy.sh' } }] },
      ],
    });
    const parked = await h.run('deploy');
    expect(parked.kind).toBe('parked');
    if (parked.kind !== 'parked') return;
    expect(h.toolCalls()[0].status).toBe('running');
    const r = restart(h, { agents, tools, script: [{ content: 'deployed' }, { content: 'all good' }] });
    expect(await r.resolve(parked.toolCallId, { kind: 'approved' })).toMatchObject({
      kind: 'final',
      content: 'all good',
    });
    expect(r.model.calls.map((c) => c.messages[0].content)).toEqual(['OPS', 'You are the main agent.']);
    expect(r.toolCalls()[0]).toMatchObject({ status: 'done', result: 'deployed' });
  });

  it('a parked parallel batch is continued, not reaped: each sibling resumes its own subtree', async () => {
    const agents = [agent({ id: 'a', prompt: 'A' }), agent({ id: 'b', prompt: 'B' })];
    const script = (req: { messages: { role: string; content: unknown }[] }): ScriptStep => {
      const sys = req.messages[0].content;
      const answered = req.messages.filter((m) => m.role === 'tool').length;
      if (sys === 'A' || sys === 'B') {
        return answered === 0
          ? {
              toolCalls: [
                { id: `${String(sys)}1`, name: 'execute_cmd', arguments: { command: `deploy ${String(sys)}` } },
              ],
            }
          : { content: `${String(sys)} deployed` };
      }
      return answered === 0
        ? {
            toolCalls: [
              { id: 'ta', name: 'execute_task', arguments: { agent_id: 'a', prompt: 'pa' } },
              { id: 'tb', name: 'execute_task', arguments: { agent_id: 'b', prompt: 'pb' } },
            ],
          }
        : { content: 'both deployed' };
    };
    const gate = new FakeGate({ execute_cmd: { kind: 'require' } });
    const h = new LoopHarness({ agents, tools, gate, human: new FakeHuman(() => ({ kind: 'park' })), script });
    const parked = await h.run('deploy both');
    expect(parked.kind).toBe('parked');
    const waiting = h.toolCalls().filter((c) => c.status === 'awaiting_human');
    expect(waiting).toHaveLength(2);

    const r = restart(h, { agents, tools, gate, human: new FakeHuman([{ kind: 'approved' }]), script });
    const first = waiting.find((c) => c.argumentsText.includes('deploy A'))!;
    const second = waiting.find((c) => c.argumentsText.includes('deploy B'))!;
    expect(await r.resolve(first.id, { kind: 'approved' })).toMatchObject({ kind: 'final', content: 'both deployed' });
    expect(r.human.requests.map((q) => q.requestId)).toEqual([second.requestId]);
    expect(r.tools.started).toHaveLength(2);
    const spawning = r.toolCalls().filter((c) => c.name === 'execute_task');
    expect(spawning.map((c) => [c.status, c.result])).toEqual([
      ['done', 'A deployed'],
      ['done', 'B deployed'],
    ]);
    expect(
      r
        .frames()
        .filter((f) => f.depth === 1)
        .every((f) => f.status === 'closed'),
    ).toBe(true);
  });
});
