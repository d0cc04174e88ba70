import { LoopHarness, FakeGate, FakeHuman } from './testing';
import type { GateRequest } from './ports';

const write = {
  name: 'write_file',
  run: async (args: unknown) => ({
    ok: true as const,
    content: 'written',
    changedPaths: [(args as { path: string }).path],
  }),
  preview: async (args: unknown) => ({ path: (args as { path: string }).path, oldContent: 'old', newContent: 'new' }),
};

describe('one tool call', () => {
  it('runs in order: row persisted pending → tool_start with the LLM args → WD injection → gate → execute → record', async () => {
    const trace: string[] = [];
    let h!: LoopHarness;
    const gate = new FakeGate((req: GateRequest) => {
      const row = h.toolCalls()[0];
      trace.push(
        `gate sees row ${row.status}, tool_start ${h.eventTypes().includes('tool_start')}, path ${(req.arguments as { path: string }).path}`,
      );
      return { kind: 'allow' };
    });
    h = new LoopHarness({
      gate,
      session: { runContext: { workingDirectory: '/workspace/proj', systemPrompt: [] } },
      tools: [
        {
          name: 'write_file',
          run: async (args) => {
            trace.push(`run ${(args as { path: string }).path}, row ${h.toolCalls()[0].status}`);
            return { ok: true, content: 'written', changedPaths: ['/workspace/proj/src/a.ts'] };
          },
        },
      ],
      script: [
        { toolCalls: [{ name: 'write_file', arguments: { path: 'src/a.ts', content: 'x' } }] },
        { content: 'ok' },
      ],
    });
    await h.run('write');
    // A tool that re-runs after a crash (reExecute) allowed by the gate is not marked `running`
    // first: recovery runs a `pending` call of that hint exactly as a `running` one.
    expect(trace).toEqual([
      'gate sees row pending, tool_start true, path /workspace/proj/src/a.ts',
      'run /workspace/proj/src/a.ts, row pending',
    ]);
    expect(h.eventsOf('tool_start')[0].arguments).toEqual({ path: 'src/a.ts', content: 'x' });
    expect(h.eventTypes()).toEqual(['user_message', 'tool_start', 'tool_done', 'file_changed', 'done']);
    expect(h.eventsOf('file_changed')[0].path).toBe('/workspace/proj/src/a.ts');
  });

  it.each([
    ['markInterrupted, allowed by the gate', 'markInterrupted', 'allow', 'running'],
    ['reExecute, approved by a human', 'reExecute', 'require', 'running'],
    ['reExecute, allowed by the gate', 'reExecute', 'allow', 'pending'],
  ] as const)('a call of a %s tool runs with its row %s', async (_what, restartHint, gateKind, expected) => {
    const seen: string[] = [];
    const h: LoopHarness = new LoopHarness({
      gate: new FakeGate(() => ({ kind: gateKind })),
      human: new FakeHuman([{ kind: 'approved' }]),
      tools: [
        {
          name: 'act',
          restartHint,
          run: async () => {
            seen.push(h.toolCalls()[0].status);
            return { ok: true, content: 'done' };
          },
        },
      ],
      script: [{ toolCalls: [{ name: 'act', arguments: {} }] }, { content: 'ok' }],
    });
    await h.run('go');
    // Only a call that may not run twice, or one a human answered, is marked before it runs.
    expect(seen).toEqual([expected]);
  });

  it('injects the working directory as workdir for execute_cmd unless the model set one, and never rewrites memory paths', async () => {
    const h = new LoopHarness({
      session: { runContext: { workingDirectory: '/workspace/proj', systemPrompt: [] } },
      tools: [
        { name: 'execute_cmd', run: async () => ({ ok: true, content: '' }) },
        { name: 'read_file', run: async () => ({ ok: true, content: '' }) },
      ],
      script: [
        {
          toolCalls: [
            { name: 'execute_cmd', arguments: { command: 'ls' } },
            { name: 'execute_cmd', arguments: { command: 'ls', workdir: '/workspace/other' } },
            { name: 'read_file', arguments: { path: 'user-memory/notes.md' } },
            { name: 'read_file', arguments: { path: '../x/./y.txt' } },
          ],
        },
        { content: 'ok' },
      ],
    });
    await h.run('go');
    expect(h.tools.started.map((r) => r.arguments)).toEqual([
      { command: 'ls', workdir: '/workspace/proj' },
      { command: 'ls', workdir: '/workspace/other' },
      { path: 'user-memory/notes.md' },
      { path: '/workspace/x/y.txt' },
    ]);
  });

  it('Deny records the call rejected with the reason, emits tool_rejected and continues the turn', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: { kind: 'deny', reason: 'Writes outside the workspace are denied.' } }),
      tools: [write],
      script: [
        { toolCalls: [{ name: 'write_file', arguments: { path: '/etc/passwd', content: '' } }] },
        { content: 'I could not.' },
      ],
    });
    const outcome = await h.run('go');
    expect(outcome).toMatchObject({ kind: 'final', content: 'I could not.' });
    expect(h.tools.started).toHaveLength(0);
    expect(h.toolCalls()[0]).toMatchObject({ status: 'rejected', result: 'Writes outside the workspace are denied.' });
    expect(h.eventsOf('tool_rejected')[0].reason).toBe('Writes outside the workspace are denied.');
    expect(h.model.calls[1].messages).toContainEqual({
      role: 'tool',
      tool_call_id: 'call_1',
      content: 'Writes outside the workspace are denied.',
    });
  });

  it('Require → awaiting_human row + pending_write with the preview, then approved → executes', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ write_file: { kind: 'require' } }),
      human: new FakeHuman([{ kind: 'approved' }]),
      tools: [write],
      script: [
        { toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'new' } }] },
        { content: 'ok' },
      ],
    });
    await h.run('go');
    const [call] = h.toolCalls();
    const [pw] = h.eventsOf('pending_write');
    expect(pw).toMatchObject({
      tool_call_id: call.id,
      kind: 'file',
      path: 'a.txt',
      old_content: 'old',
      new_content: 'new',
    });
    expect(pw.request_id).toBe(call.requestId);
    expect(h.human.requests[0]).toMatchObject({ kind: 'approval', requestId: call.requestId, toolCallId: call.id });
    expect(call.status).toBe('done');
    expect(h.eventTypes()).toEqual([
      'user_message',
      'tool_start',
      'pending_write',
      'tool_done',
      'file_changed',
      'done',
    ]);
  });

  it('execute_cmd approvals are a pending_write of kind command, new_content "$ <command>", no path', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ execute_cmd: { kind: 'require' } }),
      human: new FakeHuman([{ kind: 'approved' }]),
      tools: [{ name: 'execute_cmd', run: async () => ({ ok: true, content: 'hi' }) }],
      script: [{ toolCalls: [{ name: 'execute_cmd', arguments: { command: 'echo hi' } }] }, { content: 'ok' }],
    });
    await h.run('go');
    const [card] = h.eventsOf('pending_write');
    expect(card).toMatchObject({ kind: 'command', new_content: '$ echo hi' });
    expect(card).not.toHaveProperty('path');
  });

  it('other tools without a preview get approval_required with the arguments', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ mcp__gh__create_issue: { kind: 'require' } }),
      human: new FakeHuman([{ kind: 'approved' }]),
      tools: [{ name: 'mcp__gh__create_issue', run: async () => ({ ok: true, content: '#1' }) }],
      script: [{ toolCalls: [{ name: 'mcp__gh__create_issue', arguments: { title: 'bug' } }] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(h.eventsOf('approval_required')[0]).toMatchObject({
      tool_name: 'mcp__gh__create_issue',
      arguments: { title: 'bug' },
    });
  });

  it('a rejection with a note reaches the model as the exact sentence', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ execute_cmd: { kind: 'require' } }),
      human: new FakeHuman([{ kind: 'rejected', note: 'not on prod' }, { kind: 'rejected' }]),
      tools: [{ name: 'execute_cmd', run: async () => ({ ok: true, content: '' }) }],
      script: [
        {
          toolCalls: [
            { name: 'execute_cmd', arguments: { command: 'rm -rf /' } },
            { name: 'execute_cmd', arguments: { command: 'x' } },
          ],
        },
        { content: 'ok' },
      ],
    });
    await h.run('go');
    expect(h.toolCalls().map((c) => c.result)).toEqual([
      'User rejected this tool call. Reason: not on prod',
      'User rejected this tool call.',
    ]);
    expect(h.eventsOf('tool_rejected').map((e) => e.reason)).toEqual([
      'User rejected this tool call. Reason: not on prod',
      'User rejected this tool call.',
    ]);
    expect(h.tools.started).toHaveLength(0);
  });

  it('auto-deny sessions reject a Require without asking', async () => {
    const h = new LoopHarness({
      session: { autoDenyApprovals: true },
      gate: new FakeGate({ execute_cmd: { kind: 'require' } }),
      tools: [{ name: 'execute_cmd', run: async () => ({ ok: true, content: '' }) }],
      script: [{ toolCalls: [{ name: 'execute_cmd', arguments: { command: 'ls' } }] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(h.human.requests).toHaveLength(0);
    expect(h.toolCalls()[0].status).toBe('rejected');
    expect(h.toolCalls()[0].result).toMatch(/^User rejected this tool call\. Reason: /);
  });

  it('the gate is told the session cannot ask a human (so it can audit the refusal as auto_deny)', async () => {
    const gate = new FakeGate({ execute_cmd: { kind: 'require' } });
    const h = new LoopHarness({
      session: { autoDenyApprovals: true },
      gate,
      tools: [{ name: 'execute_cmd', run: async () => ({ ok: true, content: '' }) }],
      script: [{ toolCalls: [{ name: 'execute_cmd', arguments: { command: 'ls' } }] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(gate.checks.map((c) => c.autoDeny)).toEqual([true]);
    const interactive = new FakeGate();
    await new LoopHarness({
      gate: interactive,
      tools: [{ name: 'execute_cmd', run: async () => ({ ok: true, content: '' }) }],
      script: [{ toolCalls: [{ name: 'execute_cmd', arguments: { command: 'ls' } }] }, { content: 'ok' }],
    }).run('go');
    expect(interactive.checks.map((c) => c.autoDeny)).toEqual([false]);
  });

  it('a wait ended by /stop (channel closed) cancels the call and ends the turn Cancelled', async () => {
    const stop = new AbortController();
    const h = new LoopHarness({
      gate: new FakeGate({ execute_cmd: { kind: 'require' } }),
      human: new FakeHuman(['wait']),
      tools: [{ name: 'execute_cmd', run: async () => ({ ok: true, content: '' }) }],
      script: [{ toolCalls: [{ name: 'execute_cmd', arguments: { command: 'ls' } }] }],
    });
    const run = h.run('go', stop.signal);
    await new Promise((r) => setTimeout(r, 5));
    expect(h.toolCalls()[0].status).toBe('awaiting_human');
    stop.abort();
    expect(await run).toEqual({ kind: 'cancelled' });
    expect(h.toolCalls()[0]).toMatchObject({ status: 'cancelled', result: 'Cancelled by user.' });
    expect(h.tools.started).toHaveLength(0);
  });

  it('a human answer of "park" leaves the call awaiting_human and ends the turn Parked with no terminal event', async () => {
    const h = new LoopHarness({
      gate: new FakeGate({ execute_cmd: { kind: 'require' } }),
      human: new FakeHuman([{ kind: 'park' }]),
      tools: [{ name: 'execute_cmd', run: async () => ({ ok: true, content: '' }) }],
      script: [{ toolCalls: [{ name: 'execute_cmd', arguments: { command: 'ls' } }] }],
    });
    const outcome = await h.run('go');
    const [call] = h.toolCalls();
    expect(outcome).toEqual({ kind: 'parked', toolCallId: call.id, requestId: call.requestId });
    expect(call.status).toBe('awaiting_human');
    expect(h.eventTypes()).toEqual(['user_message', 'tool_start', 'pending_write']);
    expect((await h.store.getSession(h.sessionId)).turnState).toBe('parked');
  });

  it('a failing tool is recorded failed with tool_error, and the model sees "Error: <error>"', async () => {
    const h = new LoopHarness({
      tools: [
        { name: 'read_file', run: async () => ({ ok: false, error: 'no such file' }) },
        { name: 'grep_files', run: async () => Promise.reject(new Error('boom')) },
      ],
      script: [
        {
          toolCalls: [
            { name: 'read_file', arguments: { path: 'x' } },
            { name: 'grep_files', arguments: {} },
          ],
        },
        { content: 'ok' },
      ],
    });
    await h.run('go');
    expect(h.toolCalls().map((c) => [c.status, c.result])).toEqual([
      ['failed', 'no such file'],
      ['failed', 'boom'],
    ]);
    expect(h.eventsOf('tool_error').map((e) => e.error)).toEqual(['no such file', 'boom']);
    const tools = h.model.calls[1].messages.filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.content)).toEqual(['Error: no such file', 'Error: boom']);
  });

  it('stores invalid JSON arguments verbatim and shows them raw in tool_start', async () => {
    const h = new LoopHarness({
      tools: [{ name: 'read_file', run: async () => ({ ok: false, error: 'bad args' }) }],
      script: [{ toolCalls: [{ name: 'read_file', arguments: '{"path": "a' }] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(h.toolCalls()[0].argumentsText).toBe('{"path": "a');
    expect(h.eventsOf('tool_start')[0].arguments).toBe('{"path": "a');
  });

  it('streams tool progress as ephemeral tool_progress events', async () => {
    const h = new LoopHarness({
      tools: [
        {
          name: 'execute_cmd',
          run: async (_a, _s, progress) => {
            progress({ stream: 'stdout', chunk: 'line 1\n' });
            return { ok: true, content: 'line 1\n' };
          },
        },
      ],
      script: [{ toolCalls: [{ name: 'execute_cmd', arguments: { command: 'x' } }] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(h.sink.events).toEqual([
      {
        type: 'tool_progress',
        session_id: 'session-1',
        tool_call_id: h.toolCalls()[0].id,
        stream: 'stdout',
        chunk: 'line 1\n',
      },
    ]);
  });
});
