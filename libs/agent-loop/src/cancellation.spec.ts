import { agent, LoopHarness } from './testing';

describe('cancellation', () => {
  it('is checked at each round start: a stop between rounds ends Cancelled without another model call', async () => {
    const stop = new AbortController();
    const h = new LoopHarness({
      tools: [{ name: 'ping', run: async () => ({ ok: true, content: 'pong' }) }],
      script: [{ toolCalls: [{ name: 'ping' }] }, { content: 'never' }],
    });
    // The stop lands right after the call was recorded: only the next round start can see it.
    const commit = h.store.commit.bind(h.store);
    h.store.commit = async (sid, mutations, events) => {
      await commit(sid, mutations, events);
      if (events.some((e) => e.type === 'tool_done')) stop.abort();
    };
    const outcome = await h.run('go', stop.signal);
    expect(outcome).toEqual({ kind: 'cancelled' });
    expect(h.model.calls).toHaveLength(1);
    expect(h.toolCalls()[0].status).toBe('done');
    expect(h.eventTypes().slice(-2)).toEqual(['tool_done', 'error']);
  });

  it('is checked before each tool call: calls after a stop are cancelled, never run', async () => {
    const stop = new AbortController();
    const h = new LoopHarness({
      tools: [
        {
          name: 'first',
          run: async () => {
            stop.abort();
            return { ok: true, content: 'done anyway' };
          },
        },
        { name: 'second', run: async () => ({ ok: true, content: 'ran' }) },
      ],
      script: [{ toolCalls: [{ name: 'first' }, { name: 'second' }] }, { content: 'never' }],
    });
    const outcome = await h.run('go', stop.signal);
    expect(outcome.kind).toBe('cancelled');
    expect(h.tools.runsOf('second')).toHaveLength(0);
    const [first, second] = h.toolCalls();
    expect(first.status).toBe('cancelled');
    expect(second).toMatchObject({ status: 'cancelled', result: 'Cancelled by user.' });
    expect(h.eventsOf('tool_cancelled').map((e) => e.tool_call_id)).toEqual([first.id, second.id]);
  });

  it('aborts the in-flight LLM request', async () => {
    const stop = new AbortController();
    let seenSignal: AbortSignal | null = null;
    const h = new LoopHarness({ script: [{ hang: true }] });
    const stream = h.model.stream.bind(h.model);
    h.model.stream = (client, req, signal, onDelta) => {
      seenSignal = signal;
      setTimeout(() => stop.abort(), 5);
      return stream(client, req, signal, onDelta);
    };
    const outcome = await h.run('hi', stop.signal);
    expect(outcome.kind).toBe('cancelled');
    expect(seenSignal!.aborted).toBe(true);
  });

  it('aborts the in-flight tool: its stop() is called and the call is recorded cancelled', async () => {
    const stop = new AbortController();
    const h = new LoopHarness({
      tools: [
        {
          name: 'execute_cmd',
          restartHint: 'markInterrupted',
          run: () => {
            setTimeout(() => stop.abort(), 5);
            return new Promise(() => undefined);
          },
        },
      ],
      script: [{ toolCalls: [{ name: 'execute_cmd', arguments: { command: 'sleep 100' } }] }],
    });
    const outcome = await h.run('run it', stop.signal);
    expect(outcome.kind).toBe('cancelled');
    const [call] = h.toolCalls();
    expect(h.tools.stopped).toEqual([call.id]);
    expect(call).toMatchObject({ status: 'cancelled', result: 'Cancelled by user.' });
    expect(h.eventTypes().slice(-2)).toEqual(['tool_cancelled', 'error']);
  });

  it('is sticky through sub-agents: a stop inside a child cancels the child, its parent call and the root', async () => {
    const stop = new AbortController();
    const h = new LoopHarness({
      agents: [agent({ id: 'helper' })],
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'helper', prompt: 'work' } }] },
        { hang: true, before: () => setTimeout(() => stop.abort(), 1) },
        { content: 'root must not run again' },
      ],
    });
    const outcome = await h.run('delegate', stop.signal);
    expect(outcome.kind).toBe('cancelled');
    expect(h.model.calls).toHaveLength(2);
    const [parentCall] = h.toolCalls();
    expect(parentCall.status).toBe('cancelled');
    expect(h.frames().find((f) => f.depth === 1)?.status).toBe('closed');
    expect(h.eventTypes().slice(-4)).toEqual(['agent_start', 'agent_done', 'tool_cancelled', 'error']);
  });
});
