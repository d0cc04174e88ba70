import { LoopHarness } from './testing';

const echoTool = {
  name: 'read_file',
  run: async (args: unknown) => ({ ok: true as const, content: `contents of ${(args as { path: string }).path}` }),
};

describe('runTurn: the simple path', () => {
  it('a text answer ends Final and writes the user row, the assistant row and user_message → done', async () => {
    const h = new LoopHarness({ script: [{ content: 'Hello!', usage: { inputTokens: 10, outputTokens: 2 } }] });
    const outcome = await h.run('hi');
    expect(outcome).toMatchObject({ kind: 'final', content: 'Hello!', toolCalls: [], truncated: false });
    expect(h.messages().map((m) => [m.role, m.content])).toEqual([
      ['user', 'hi'],
      ['assistant', 'Hello!'],
    ]);
    expect(h.eventTypes()).toEqual(['user_message', 'done']);
    const done = h.eventsOf('done')[0];
    expect(done).toMatchObject({
      content: 'Hello!',
      input_tokens: 10,
      output_tokens: 2,
      seq: 2,
      session_id: 'session-1',
    });
    expect((await h.store.getSession(h.sessionId)).turnState).toBe('finished');
  });

  it("a turn's id is the id of the message that started it, kept after the turn ends and replaced by the next turn", async () => {
    const h = new LoopHarness({ script: [{ content: 'one' }, { content: 'two' }] });
    await h.run('first');
    await h.run('second');
    const [first, , second] = h.messages();
    expect(first.id).not.toBe(second.id);
    const echoes = h.eventsOf('user_message').map((e) => e.message_id);
    expect(echoes).toEqual([first.id, second.id]);
    expect((await h.store.getSession(h.sessionId)).turnId).toBe(second.id);
  });

  it('one tool call goes gate allow → execute → record and the next round sees the result', async () => {
    const h = new LoopHarness({
      tools: [echoTool],
      script: [
        { content: 'Let me look.', toolCalls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] },
        { content: 'Done.' },
      ],
    });
    const outcome = await h.run('read a.txt');
    expect(outcome.kind).toBe('final');
    if (outcome.kind !== 'final') return;
    expect(outcome.toolCalls).toEqual([
      expect.objectContaining({ name: 'read_file', status: 'done', result: 'contents of a.txt' }),
    ]);
    expect(h.gate.checks.map((c) => c.name)).toEqual(['read_file']);
    expect(h.eventTypes()).toEqual(['user_message', 'thinking', 'tool_start', 'tool_done', 'done']);
    const second = h.model.calls[1].messages;
    expect(second.slice(1, 4)).toEqual([
      { role: 'user', content: 'read a.txt' },
      {
        role: 'assistant',
        content: 'Let me look.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'contents of a.txt' },
    ]);
    const [call] = h.toolCalls();
    expect(call).toMatchObject({ status: 'done', llmCallId: 'call_1', argumentsText: '{"path":"a.txt"}' });
    expect(h.eventsOf('tool_start')[0]).toMatchObject({
      tool_call_id: call.id,
      arguments: { path: 'a.txt' },
      path: 'a.txt',
    });
  });
});

describe('runTurn: outcomes', () => {
  const ping = { name: 'ping', run: async () => ({ ok: true as const, content: 'pong' }) };

  it('rounds up to maxToolRounds without a final answer end Exhausted with an `exhausted` error event', async () => {
    const h = new LoopHarness({
      tools: [ping],
      config: { maxToolRounds: 3 },
      script: [1, 2, 3, 4].map(() => ({ toolCalls: [{ name: 'ping' }] })),
    });
    const outcome = await h.run('loop');
    expect(outcome).toEqual({ kind: 'exhausted', rounds: 3 });
    expect(h.model.calls).toHaveLength(3);
    expect(h.eventsOf('error')).toEqual([expect.objectContaining({ code: 'exhausted' })]);
    expect((await h.store.getSession(h.sessionId)).turnState).toBe('finished');
  });

  it('a text answer ends Final carrying the tool calls of every round', async () => {
    const h = new LoopHarness({
      tools: [ping],
      script: [
        { toolCalls: [{ name: 'ping' }, { name: 'ping' }] },
        { toolCalls: [{ name: 'ping' }] },
        { content: 'three pongs' },
      ],
    });
    const outcome = await h.run('go');
    expect(outcome.kind).toBe('final');
    if (outcome.kind !== 'final') return;
    expect(outcome.content).toBe('three pongs');
    expect(outcome.toolCalls.map((c) => [c.llmCallId, c.status])).toEqual([
      ['call_1', 'done'],
      ['call_2', 'done'],
      ['call_3', 'done'],
    ]);
  });

  it('/stop ends Cancelled with an `interrupted` error event', async () => {
    const stop = new AbortController();
    const h = new LoopHarness({ script: [{ hang: true, before: () => stop.abort() }] });
    const outcome = await h.run('hi', stop.signal);
    expect(outcome).toEqual({ kind: 'cancelled' });
    expect(h.eventsOf('error')).toEqual([expect.objectContaining({ code: 'interrupted' })]);
    expect(h.messages().filter((m) => m.role === 'assistant')).toHaveLength(0);
  });

  it('a finish_reason of length ends Final truncated, with a `truncated` event after `done`', async () => {
    const h = new LoopHarness({
      script: [{ content: 'cut', finishReason: 'length', usage: { inputTokens: 5, outputTokens: 99 } }],
    });
    const outcome = await h.run('long');
    expect(outcome).toMatchObject({ kind: 'final', truncated: true });
    expect(h.eventTypes().slice(-2)).toEqual(['done', 'truncated']);
    expect(h.eventsOf('truncated')[0]).toMatchObject({ output_tokens: 99 });
  });

  it('streams content deltas as ephemeral token_delta events: message id, depth, offset', async () => {
    const delta = { type: 'token_delta', session_id: 'session-1', depth: 0, kind: 'content' } as const;
    const h = new LoopHarness({ script: [{ content: 'Hello', deltas: ['Hel', 'lo'] }] });
    const outcome = await h.run('hi');
    if (outcome.kind !== 'final') throw new Error('expected final');
    expect(h.sink.events).toEqual([
      { ...delta, message_id: outcome.messageId, offset: 0, delta: 'Hel' },
      { ...delta, message_id: outcome.messageId, offset: 3, delta: 'lo' },
    ]);
    expect(h.eventTypes()).not.toContain('token_delta');
  });

  it('an inbox input enters the conversation with its client message id; a no-longer-pending item is idle', async () => {
    const h = new LoopHarness({ script: [{ content: 'ok' }] });
    const id = h.enqueue('from the inbox', 'queue', 'c-1');
    await h.run({ kind: 'inbox', inboxId: id });
    expect(h.messages()[0]).toMatchObject({ id, content: 'from the inbox', clientMessageId: 'c-1' });
    expect(h.eventsOf('user_message')[0]).toMatchObject({ message_id: id, client_message_id: 'c-1' });
    expect(h.store.inboxState(id)).toBe('entered');
    expect(await h.run({ kind: 'inbox', inboxId: id })).toEqual({ kind: 'idle' });
  });

  it('a synthetic input is stored but not echoed', async () => {
    const h = new LoopHarness({ script: [{ content: 'tick handled' }] });
    await h.run({ kind: 'message', content: 'tick', isSynthetic: true });
    expect(h.messages()[0]).toMatchObject({ content: 'tick', isSynthetic: true });
    expect(h.eventTypes()).toEqual(['done']);
  });
});

describe('runTurn: store failures', () => {
  it('a LeaseLostError from a commit is rethrown and nothing more is written', async () => {
    const { LeaseLostError } = await import('./ports');
    const ping = {
      name: 'ping',
      restartHint: 'markInterrupted' as const,
      run: async () => {
        h.store.loseLease();
        return { ok: true as const, content: 'pong' };
      },
    };
    const h: LoopHarness = new LoopHarness({
      tools: [ping],
      script: [{ toolCalls: [{ name: 'ping' }] }, { content: 'x' }],
    });
    await expect(h.run('go')).rejects.toBeInstanceOf(LeaseLostError);
    expect(h.model.calls).toHaveLength(1);
    expect(h.toolCalls()[0].status).toBe('running');
    expect(h.eventTypes()).not.toContain('tool_done');
    expect(h.eventTypes()).not.toContain('error');
    expect((await h.store.getSession(h.sessionId)).turnState).toBe('running');
  });
});
