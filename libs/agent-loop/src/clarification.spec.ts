import { FakeHuman, LoopHarness, agent } from './testing';

const ask = {
  name: 'ask_user_clarification',
  arguments: { title: 'Colour', question: 'Which colour?', suggested_answers: ['red', 'blue'] },
};

describe('ask_user_clarification', () => {
  it('suspends with an agent_question and the answer is the tool result', async () => {
    const h = new LoopHarness({
      human: new FakeHuman([{ kind: 'answered', answer: 'blue' }]),
      script: [{ toolCalls: [ask] }, { content: 'Blue it is.' }],
    });
    const outcome = await h.run('paint it');
    expect(outcome).toMatchObject({ kind: 'final', content: 'Blue it is.' });
    const [call] = h.toolCalls();
    expect(call).toMatchObject({ status: 'done', result: 'blue' });
    expect(h.eventsOf('agent_question')[0]).toMatchObject({
      request_id: call.requestId,
      tool_call_id: call.id,
      title: 'Colour',
      question: 'Which colour?',
      suggested_answers: ['red', 'blue'],
    });
    expect(h.human.requests[0]).toMatchObject({
      kind: 'question',
      requestId: call.requestId,
      question: 'Which colour?',
    });
    expect(h.model.calls[1].messages).toContainEqual({ role: 'tool', tool_call_id: 'call_1', content: 'blue' });
  });

  it('works inside a sub-agent too', async () => {
    const h = new LoopHarness({
      agents: [agent({ id: 'worker' })],
      human: new FakeHuman([{ kind: 'answered', answer: 'red' }]),
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'worker', prompt: 'p' } }] },
        { toolCalls: [ask] },
        { content: 'child chose red' },
        { content: 'root: red' },
      ],
    });
    expect(await h.run('go')).toMatchObject({ kind: 'final', content: 'root: red' });
    expect(h.toolCalls().find((c) => c.name === 'ask_user_clarification')?.result).toBe('red');
  });

  it('the wait ends only by an answer or /stop: a stop cancels the call and the turn ends Cancelled', async () => {
    const stop = new AbortController();
    const h = new LoopHarness({ human: new FakeHuman(['wait']), script: [{ toolCalls: [ask] }, { content: 'never' }] });
    const run = h.run('paint it', stop.signal);
    await new Promise((r) => setTimeout(r, 20));
    // still waiting: nothing but the answer or a stop ends it
    expect(h.toolCalls()[0].status).toBe('awaiting_human');
    expect(h.model.calls).toHaveLength(1);
    stop.abort();
    expect(await run).toEqual({ kind: 'cancelled' });
    expect(h.toolCalls()[0]).toMatchObject({ status: 'cancelled', result: 'Cancelled by user.' });
    expect(h.eventTypes().slice(-2)).toEqual(['tool_cancelled', 'error']);
  });

  it('a cancelled answer (session reset, job kill) also ends the turn Cancelled', async () => {
    const h = new LoopHarness({ human: new FakeHuman([{ kind: 'cancelled' }]), script: [{ toolCalls: [ask] }] });
    expect(await h.run('paint')).toEqual({ kind: 'cancelled' });
    expect(h.toolCalls()[0].status).toBe('cancelled');
  });

  it('in an unattended (auto-deny) session it fails at once instead of waiting', async () => {
    const h = new LoopHarness({
      session: { autoDenyApprovals: true },
      script: [{ toolCalls: [ask] }, { content: 'guessing' }],
    });
    await h.run('paint');
    expect(h.human.requests).toHaveLength(0);
    expect(h.toolCalls()[0].status).toBe('failed');
  });

  it('parks and a later answer through resolvePendingCall continues the turn with the answer as result', async () => {
    const h = new LoopHarness({
      human: new FakeHuman([{ kind: 'park' }]),
      script: [{ toolCalls: [ask] }, { content: 'Blue.' }],
    });
    const parked = await h.run('paint');
    expect(parked.kind).toBe('parked');
    const [call] = h.toolCalls();
    const outcome = await h.resolve(call.id, { kind: 'answered', answer: 'blue' });
    expect(outcome).toMatchObject({ kind: 'final', content: 'Blue.' });
    expect(h.toolCalls()[0]).toMatchObject({ status: 'done', result: 'blue' });
    expect(h.eventsOf('agent_question')).toHaveLength(1);
  });
});
