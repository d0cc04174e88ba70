import { expect } from '@jest/globals';
import { nextTurnItem } from './injection';
import { agent, LoopHarness } from './testing';
import type { InboxDelivery } from './types';

/** An async task's ending (or a notification) delivered through the inbox as a completed call. */
function deliver(h: LoopHarness, result: string, delivery: InboxDelivery = 'steer'): string {
  const id = h.ids.newId();
  h.store.addInbox({
    id,
    sessionId: h.sessionId,
    clientMessageId: `job:${id}`,
    content: '',
    attachments: null,
    delivery,
    createdAt: h.clock.now().toISOString(),
    toolResult: {
      toolName: 'task_completed',
      argumentsText: JSON.stringify({ task_id: 'job-1', title: 'Research' }),
      result,
    },
  });
  return id;
}

describe('task_completed delivery', () => {
  it('an idle conversation resumes with a synthetic assistant message carrying a completed task_completed call', async () => {
    const h = new LoopHarness({ script: [{ content: 'started it' }, { content: 'The research found 3 papers.' }] });
    await h.run('research this in the background');
    const inboxId = deliver(h, 'Found 3 papers.');
    const outcome = await h.run({ kind: 'inbox', inboxId });
    expect(outcome.kind).toBe('final');
    const sent = h.model.calls[1].messages.filter((m) => m.role !== 'system');
    expect(sent.map((m) => m.role)).toEqual(['user', 'assistant', 'assistant', 'tool']);
    const tail = sent.slice(-2);
    expect(tail[0]).toMatchObject({
      role: 'assistant',
      tool_calls: [{ type: 'function', function: { name: 'task_completed' } }],
    });
    expect(
      JSON.parse(
        (tail[0] as { tool_calls: Array<{ function: { arguments: string } }> }).tool_calls[0].function.arguments,
      ),
    ).toEqual({
      task_id: 'job-1',
      title: 'Research',
    });
    expect(tail[1]).toMatchObject({ role: 'tool', content: 'Found 3 papers.' });
    const synthetic = h.messages().find((m) => m.id === inboxId);
    expect(synthetic).toMatchObject({ role: 'assistant', isSynthetic: true });
    expect(h.toolCalls().find((c) => c.messageId === inboxId)).toMatchObject({
      name: 'task_completed',
      status: 'done',
    });
    // never echoed as a user message
    expect(h.eventsOf('user_message')).toHaveLength(1);
    expect(await h.store.listInbox(h.sessionId)).toEqual([]);
  });

  it('a running conversation takes it at the next round boundary, after the tool results of that round', async () => {
    const h: LoopHarness = new LoopHarness({
      tools: [
        {
          name: 'ping',
          run: async () => {
            deliver(h, 'The task "Research" failed: boom. It produced no output before it ended.');
            return { ok: true, content: 'pong' };
          },
        },
      ],
      script: [{ toolCalls: [{ name: 'ping' }] }, { content: 'The background research failed; I will retry.' }],
    });
    expect((await h.run('go')).kind).toBe('final');
    const sent = h.model.calls[1].messages.filter((m) => m.role !== 'system');
    expect(sent.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool']);
    expect(sent[4]).toMatchObject({ content: expect.stringContaining('failed: boom') });
  });
});

describe('execute_task mode async refused by the scheduler', () => {
  it('the refusal (the per-user cap) is the call failure the model reads, and the turn goes on', async () => {
    const h = new LoopHarness({
      agents: [agent({ id: 'bg' })],
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'bg', prompt: 'x', mode: 'async' } }] },
        { content: 'I will wait for the others.' },
      ],
    });
    h.deps.tasks = {
      submitAsync: () => Promise.reject(new Error('You already have 5 background tasks running (the limit is 5).')),
    };
    expect((await h.run('go')).kind).toBe('final');
    expect(h.toolCalls()[0]).toMatchObject({
      status: 'failed',
      result: 'You already have 5 background tasks running (the limit is 5).',
    });
  });
});

describe('tools offered to a job session', () => {
  const offered = async (session: { isInteractive: boolean; autoDenyApprovals: boolean }) => {
    const h = new LoopHarness({ session, script: [{ content: 'ok' }] });
    await h.run('go');
    return h.model.calls[0].tools.map((t) => t.function.name);
  };

  it('a cron session (auto-deny, background) gets execute_subtask only and no ask_user_clarification', async () => {
    const names = await offered({ isInteractive: false, autoDenyApprovals: true });
    expect(names).toContain('execute_subtask');
    expect(names).not.toContain('execute_task');
    expect(names).not.toContain('ask_user_clarification');
  });

  it('an async task session may ask the user; an interactive chat keeps execute_task', async () => {
    expect(await offered({ isInteractive: false, autoDenyApprovals: false })).toContain('ask_user_clarification');
    const chat = await offered({ isInteractive: true, autoDenyApprovals: false });
    expect(chat).toContain('execute_task');
    expect(chat).not.toContain('execute_subtask');
  });
});

describe('a finished task waiting in the inbox survives a stop', () => {
  const hangThenStop = (stop: AbortController, during: () => void) => ({
    hang: true as const,
    before: () => {
      during();
      setTimeout(() => stop.abort(), 1);
    },
  });

  it('/stop keeps the delivery queued (not discarded, not announced) and it enters the next turn', async () => {
    const stop = new AbortController();
    let delivery = '';
    let steer = '';
    const h: LoopHarness = new LoopHarness({
      script: [
        hangThenStop(stop, () => {
          delivery = deliver(h, 'Found 3 papers.');
          steer = h.enqueue('never mind', 'steer', 'c-s');
        }),
        { content: 'The research found 3 papers.' },
      ],
    });
    expect(await h.run('start', stop.signal)).toEqual({ kind: 'cancelled' });
    expect(h.store.inboxState(delivery)).toBe('pending');
    expect(h.store.inboxState(steer)).toBe('discarded');
    expect(h.eventsOf('message_discarded').map((e) => e.message_id)).toEqual([steer]);

    const next = nextTurnItem(await h.store.listInbox(h.sessionId));
    expect(next?.id).toBe(delivery);
    expect(await h.run({ kind: 'inbox', inboxId: delivery })).toMatchObject({ kind: 'final' });
    expect(h.toolCalls().find((c) => c.messageId === delivery)).toMatchObject({
      name: 'task_completed',
      status: 'done',
      result: 'Found 3 papers.',
    });
  });

  it('an interrupt starts the next turn, and the kept delivery enters that turn at its first round boundary', async () => {
    const stop = new AbortController();
    let delivery = '';
    let interrupt = '';
    const h: LoopHarness = new LoopHarness({
      script: [
        hangThenStop(stop, () => {
          delivery = deliver(h, 'Found 3 papers.');
          interrupt = h.enqueue('stop, do this instead', 'interrupt', 'c-i');
        }),
        { content: 'Doing that instead; the research also found 3 papers.' },
      ],
    });
    expect(await h.run('start', stop.signal)).toEqual({ kind: 'cancelled' });
    expect(h.store.inboxState(delivery)).toBe('pending');

    const next = nextTurnItem(await h.store.listInbox(h.sessionId));
    expect(next?.id).toBe(interrupt);
    expect(await h.run({ kind: 'inbox', inboxId: interrupt })).toMatchObject({ kind: 'final' });
    const sent = h.model.calls[1].messages.filter((m) => m.role !== 'system');
    expect(sent.slice(-3)).toEqual([
      expect.objectContaining({ role: 'user', content: 'stop, do this instead' }),
      expect.objectContaining({ role: 'assistant', tool_calls: [expect.objectContaining({ type: 'function' })] }),
      expect.objectContaining({ role: 'tool', content: 'Found 3 papers.' }),
    ]);
    expect(await h.store.listInbox(h.sessionId)).toEqual([]);
  });
});
