import { LoopHarness } from './testing';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('fan-out', () => {
  it('a round of ≥2 concurrencySafe calls runs them concurrently and records them in call order whatever the completion order', async () => {
    let active = 0;
    let peak = 0;
    const gates = [deferred(), deferred(), deferred()];
    const done = [deferred(), deferred(), deferred()];
    const h = new LoopHarness({
      tools: [
        {
          name: 'search',
          concurrencySafe: true,
          run: async (args) => {
            const i = (args as { i: number }).i;
            active++;
            peak = Math.max(peak, active);
            if (i === 2) gates.forEach((g) => g.resolve());
            await gates[i].promise;
            // finish in reverse order: 2 first, then 1, then 0 — each once the one after it has returned and its
            // promise turns have run (setImmediate), not after a real delay that a loaded machine can reorder
            if (i < 2) await done[i + 1].promise;
            active--;
            setImmediate(() => done[i].resolve());
            return { ok: true, content: `result ${i}` };
          },
        },
      ],
      script: [{ toolCalls: [0, 1, 2].map((i) => ({ name: 'search', arguments: { i } })) }, { content: 'ok' }],
    });
    await h.run('go');
    expect(peak).toBe(3);
    expect(h.tools.finished).toEqual([h.toolCalls()[2].id, h.toolCalls()[1].id, h.toolCalls()[0].id]);
    const ids = h.toolCalls().map((c) => c.id);
    expect(h.eventsOf('tool_start').map((e) => e.tool_call_id)).toEqual(ids);
    expect(h.eventsOf('tool_done').map((e) => e.tool_call_id)).toEqual(ids);
    expect(h.eventsOf('tool_done').map((e) => e.result)).toEqual(['result 0', 'result 1', 'result 2']);
    // ids allocated in call order
    expect([...ids].sort()).toEqual(ids);
  });

  it('is bounded by maxParallelCalls (default 4)', async () => {
    let active = 0;
    let peak = 0;
    const h = new LoopHarness({
      tools: [
        {
          name: 'search',
          concurrencySafe: true,
          run: async () => {
            active++;
            peak = Math.max(peak, active);
            await new Promise((r) => setTimeout(r, 3));
            active--;
            return { ok: true, content: 'r' };
          },
        },
      ],
      script: [{ toolCalls: Array.from({ length: 7 }, () => ({ name: 'search' })) }, { content: 'ok' }],
    });
    expect(h.deps.config.maxParallelCalls).toBe(4);
    await h.run('go');
    expect(peak).toBe(4);
    expect(h.toolCalls().every((c) => c.status === 'done')).toBe(true);

    const h2 = new LoopHarness({
      config: { maxParallelCalls: 2 },
      tools: [
        {
          name: 'search',
          concurrencySafe: true,
          run: async () => {
            active++;
            peak = Math.max(peak, active);
            await new Promise((r) => setTimeout(r, 3));
            active--;
            return { ok: true, content: 'r' };
          },
        },
      ],
      script: [{ toolCalls: Array.from({ length: 5 }, () => ({ name: 'search' })) }, { content: 'ok' }],
    });
    peak = 0;
    await h2.run('go');
    expect(peak).toBe(2);
  });

  it('any mixed batch runs sequentially', async () => {
    let active = 0;
    let peak = 0;
    const slow = async (): Promise<{ ok: true; content: string }> => {
      active++;
      peak = Math.max(peak, active);
      await new Promise((r) => setTimeout(r, 3));
      active--;
      return { ok: true, content: 'r' };
    };
    const h = new LoopHarness({
      tools: [
        { name: 'search', concurrencySafe: true, run: slow },
        { name: 'execute_cmd', concurrencySafe: false, run: slow },
      ],
      script: [{ toolCalls: [{ name: 'search' }, { name: 'execute_cmd' }, { name: 'search' }] }, { content: 'ok' }],
    });
    await h.run('go');
    expect(peak).toBe(1);
    expect(h.tools.started.map((r) => r.name)).toEqual(['search', 'execute_cmd', 'search']);
  });

  it('a sequential batch announces each tool_start when its call starts, not all of them before the first runs', async () => {
    const seen = (): string => h.eventTypes().join(',');
    const h: LoopHarness = new LoopHarness({
      tools: [
        {
          name: 'execute_cmd',
          concurrencySafe: false,
          // What a client has seen when the call runs: the events committed so far.
          run: () => Promise.resolve({ ok: true as const, content: seen() }),
        },
      ],
      script: [
        {
          toolCalls: [
            { name: 'execute_cmd', arguments: { i: 0 } },
            { name: 'execute_cmd', arguments: { i: 1 } },
          ],
        },
        { content: 'ok' },
      ],
    });
    await h.run('go');
    expect(h.eventTypes()).toEqual(['user_message', 'tool_start', 'tool_done', 'tool_start', 'tool_done', 'done']);
    expect(h.eventsOf('tool_done').map((e) => e.result)).toEqual([
      'user_message,tool_start',
      'user_message,tool_start,tool_done,tool_start',
    ]);
    const ids = h.toolCalls().map((c) => c.id);
    expect(h.eventsOf('tool_start').map((e) => e.tool_call_id)).toEqual(ids);
  });

  it('a /stop during a sequential batch ends the calls that never started without a tool_start for them', async () => {
    const stop = new AbortController();
    const h = new LoopHarness({
      tools: [
        {
          name: 'execute_cmd',
          concurrencySafe: false,
          run: () => {
            stop.abort();
            return Promise.resolve({ ok: true, content: 'r' });
          },
        },
      ],
      script: [{ toolCalls: [{ name: 'execute_cmd' }, { name: 'execute_cmd' }, { name: 'execute_cmd' }] }],
    });
    expect(await h.run('go', stop.signal)).toEqual({ kind: 'cancelled' });
    const ids = h.toolCalls().map((c) => c.id);
    expect(h.toolCalls().map((c) => c.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    expect(h.tools.started).toHaveLength(1);
    expect(h.eventsOf('tool_start').map((e) => e.tool_call_id)).toEqual([ids[0]]);
  });

  it('a /stop during a concurrent batch stops every running sibling and records them cancelled in call order', async () => {
    const stop = new AbortController();
    const h = new LoopHarness({
      tools: [
        {
          name: 'search',
          concurrencySafe: true,
          run: () => {
            setTimeout(() => stop.abort(), 2);
            return new Promise(() => undefined);
          },
        },
      ],
      script: [{ toolCalls: [{ name: 'search' }, { name: 'search' }] }],
    });
    expect(await h.run('go', stop.signal)).toEqual({ kind: 'cancelled' });
    const ids = h.toolCalls().map((c) => c.id);
    expect([...h.tools.stopped].sort()).toEqual([...ids].sort());
    expect(h.eventsOf('tool_cancelled').map((e) => e.tool_call_id)).toEqual(ids);
  });
});
