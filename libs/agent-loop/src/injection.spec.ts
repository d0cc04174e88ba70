import { LoopHarness } from './testing';

describe('mid-turn injection', () => {
  it('steer messages are drained at the round boundary, each as its own user row + echo, and read as one user message', async () => {
    const h: LoopHarness = new LoopHarness({
      tools: [
        {
          name: 'ping',
          run: async () => {
            h.enqueue('also this', 'steer', 'c-a');
            h.enqueue('and that', 'steer', 'c-b');
            return { ok: true, content: 'pong' };
          },
        },
      ],
      script: [{ toolCalls: [{ name: 'ping' }] }, { content: 'both noted' }],
    });
    await h.run('start');
    const users = h.messages().filter((m) => m.role === 'user');
    expect(users.map((m) => m.content)).toEqual(['start', 'also this', 'and that']);
    expect(h.eventsOf('user_message').map((e) => e.client_message_id)).toEqual([undefined, 'c-a', 'c-b']);
    const second = h.model.calls[1].messages;
    expect(second[second.length - 2]).toEqual({ role: 'user', content: 'also this\n\nand that' });
    expect(h.eventTypes()).toEqual(['user_message', 'tool_start', 'tool_done', 'user_message', 'user_message', 'done']);
  });

  it('never interrupts the LLM call: a message arriving during the call enters at the next boundary', async () => {
    const h: LoopHarness = new LoopHarness({
      tools: [{ name: 'ping', run: async () => ({ ok: true, content: 'pong' }) }],
      script: [{ toolCalls: [{ name: 'ping' }], before: () => void h.enqueue('mid-call') }, { content: 'done' }],
    });
    const outcome = await h.run('start');
    expect(outcome.kind).toBe('final');
    expect(
      h.model.calls[0].messages.some(
        (m) => m.role === 'user' && typeof m.content === 'string' && m.content.includes('mid-call'),
      ),
    ).toBe(false);
    expect(h.model.calls[1].messages.some((m) => m.role === 'user' && m.content === 'mid-call')).toBe(true);
  });

  it('never resets the round budget', async () => {
    const h: LoopHarness = new LoopHarness({
      config: { maxToolRounds: 2 },
      tools: [
        {
          name: 'ping',
          run: async () => {
            h.enqueue('keep going');
            return { ok: true, content: 'pong' };
          },
        },
      ],
      script: [1, 2, 3].map(() => ({ toolCalls: [{ name: 'ping' }] })),
    });
    expect(await h.run('start')).toEqual({ kind: 'exhausted', rounds: 2 });
    expect(h.model.calls).toHaveLength(2);
  });

  it('queue messages wait for the next turn', async () => {
    const h: LoopHarness = new LoopHarness({
      tools: [
        {
          name: 'ping',
          run: async () => {
            h.enqueue('later', 'queue');
            return { ok: true, content: 'pong' };
          },
        },
      ],
      script: [{ toolCalls: [{ name: 'ping' }] }, { content: 'done' }],
    });
    await h.run('start');
    expect(h.messages().map((m) => m.content)).not.toContain('later');
    expect((await h.store.listInbox(h.sessionId)).map((i) => i.content)).toEqual(['later']);
  });

  it('on /stop the messages not yet injected are marked discarded (kept, announced), except interrupt messages', async () => {
    const stop = new AbortController();
    let steer = '';
    let queued = '';
    let interrupt = '';
    const h: LoopHarness = new LoopHarness({
      script: [
        {
          hang: true,
          before: () => {
            steer = h.enqueue('steer me', 'steer', 'c-s');
            queued = h.enqueue('queue me', 'queue', 'c-q');
            interrupt = h.enqueue('interrupt!', 'interrupt', 'c-i');
            setTimeout(() => stop.abort(), 1);
          },
        },
      ],
    });
    expect(await h.run('start', stop.signal)).toEqual({ kind: 'cancelled' });
    expect(h.store.inboxState(steer)).toBe('discarded');
    expect(h.store.inboxState(queued)).toBe('discarded');
    expect(h.store.inboxState(interrupt)).toBe('pending');
    expect(h.eventsOf('message_discarded')).toEqual([
      expect.objectContaining({ message_id: steer, client_message_id: 'c-s' }),
      expect.objectContaining({ message_id: queued, client_message_id: 'c-q' }),
    ]);
    expect(h.messages().map((m) => m.content)).toEqual(['start']);
  });
});

describe('orphaned messages', () => {
  it('a trailing user message the model never answered is marked failed and excluded from the next context', async () => {
    const stop = new AbortController();
    const h = new LoopHarness({
      script: [{ hang: true, before: () => setTimeout(() => stop.abort(), 1) }, { content: 'answer to B' }],
    });
    expect((await h.run('message A', stop.signal)).kind).toBe('cancelled');
    const outcome = await h.run('message B');
    expect(outcome).toMatchObject({ kind: 'final', content: 'answer to B' });
    const rows = h.messages();
    expect(rows.find((m) => m.content === 'message A')?.status).toBe('failed');
    const userMessages = h.model.calls[1].messages.filter((m) => m.role === 'user');
    expect(userMessages).toEqual([{ role: 'user', content: 'message B' }]);
  });
});
