import { LoopHarness } from './testing';
import type { InboxRewind, WireMessage } from './types';

/** The model's view of a call: role and text of every non-system message, tool calls included. */
function seen(messages: WireMessage[]): string[] {
  return messages
    .filter((m) => m.role !== 'system')
    .map((m) => {
      const text = typeof m.content === 'string' ? m.content : m.content == null ? '' : JSON.stringify(m.content);
      const calls = 'tool_calls' in m && m.tool_calls ? ` +${m.tool_calls.map((c) => c.function.name).join(',')}` : '';
      return `${m.role}:${text}${calls}`;
    });
}

/** A harness whose model answers `Q…tool` with one `peek` call first, every answer numbered. */
function harness(): LoopHarness {
  let n = 0;
  return new LoopHarness({
    tools: [{ name: 'peek', concurrencySafe: true, run: () => Promise.resolve({ ok: true, content: 'peeked' }) }],
    script: (request) => {
      const at = request.messages.findLastIndex((m) => m.role === 'user');
      const asked = request.messages[at];
      const text = typeof asked?.content === 'string' ? asked.content : JSON.stringify(asked?.content ?? '');
      const toolDone = request.messages.slice(at + 1).some((m) => m.role === 'tool');
      if (text.includes('tool') && !toolDone) return { toolCalls: [{ name: 'peek', arguments: {} }] };
      return { content: `answer ${++n}` };
    },
  });
}

function rewindItem(h: LoopHarness, rewind: InboxRewind, content: string): string {
  const id = h.ids.newId();
  h.store.addInbox({
    id,
    sessionId: h.sessionId,
    clientMessageId: `client-${id}`,
    content,
    attachments: null,
    delivery: 'queue',
    createdAt: h.clock.now().toISOString(),
    rewind,
  });
  return id;
}

describe('regenerate and edit-and-resend as inbox items (PROTOCOL regenerate / edit)', () => {
  it('regenerate: the rows after the last user message are superseded, the model sees that message exactly once and none of the old answer', async () => {
    const h = harness();
    await h.run('Q1');
    await h.run('Q2 tool');
    const before = h.messages();
    const q2 = before.find((m) => m.content === 'Q2 tool')!;
    const itemId = rewindItem(h, { kind: 'regenerate', messageId: q2.id }, q2.content);
    const calls = h.model.calls.length;
    expect((await h.run({ kind: 'inbox', inboxId: itemId })).kind).toBe('final');

    // the tool round of the regenerated answer, then its final answer
    expect(seen(h.model.calls[calls].messages)).toEqual(['user:Q1', 'assistant:answer 1', 'user:Q2 tool']);
    const rows = h.messages();
    expect(rows.filter((m) => m.role === 'user').map((m) => [m.content, m.status])).toEqual([
      ['Q1', 'ok'],
      ['Q2 tool', 'ok'],
    ]);
    expect(rows.filter((m) => m.status === 'superseded').map((m) => m.content)).toEqual(['', 'answer 2']);
    expect(h.store.inboxState(itemId)).toBe('entered');
    expect(h.eventsOf('messages_superseded')).toEqual([
      expect.objectContaining({ from_message_id: q2.id, keeps_message: true }),
    ]);
    // no echo: the user message did not enter again
    expect(h.eventsOf('user_message').map((e) => e.content)).toEqual(['Q1', 'Q2 tool']);

    // the next turn sees the new answer only
    await h.run('Q3');
    expect(seen(h.model.calls.at(-1)!.messages)).toEqual([
      'user:Q1',
      'assistant:answer 1',
      'user:Q2 tool',
      'assistant: +peek',
      'tool:peeked',
      'assistant:answer 3',
      'user:Q3',
    ]);
  });

  it('regenerate of a message whose turn was stopped before any answer answers it (not marked failed)', async () => {
    const h = new LoopHarness({ script: [{ content: 'A1' }, { hang: true }, { content: 'A2' }] });
    await h.run('Q1');
    const stop = new AbortController();
    const running = h.run('Q2', stop.signal);
    await new Promise((r) => setTimeout(r, 5));
    stop.abort();
    expect((await running).kind).toBe('cancelled');
    const q2 = h.messages().find((m) => m.content === 'Q2')!;
    const itemId = rewindItem(h, { kind: 'regenerate', messageId: q2.id }, 'Q2');
    expect((await h.run({ kind: 'inbox', inboxId: itemId })).kind).toBe('final');
    expect(seen(h.model.calls.at(-1)!.messages)).toEqual(['user:Q1', 'assistant:A1', 'user:Q2']);
    expect(h.messages().find((m) => m.id === q2.id)!.status).toBe('ok');
  });

  it('a regenerate whose message is no longer the last one is dropped (message_discarded), nothing superseded, no model call', async () => {
    const h = harness();
    await h.run('Q1');
    const q1 = h.messages()[0];
    await h.run('Q2');
    const itemId = rewindItem(h, { kind: 'regenerate', messageId: q1.id }, 'Q1');
    const calls = h.model.calls.length;
    expect((await h.run({ kind: 'inbox', inboxId: itemId })).kind).toBe('idle');
    expect(h.model.calls).toHaveLength(calls);
    expect(h.messages().filter((m) => m.status !== 'ok')).toEqual([]);
    expect(h.store.inboxState(itemId)).toBe('discarded');
    expect(h.eventsOf('message_discarded')).toEqual([expect.objectContaining({ message_id: itemId })]);
  });

  it('after every conversation of up to five exchanges, a regenerate or an edit of each message gives the model the live history, the answered message once, nothing superseded', async () => {
    // Every case, not a sample: 1 to 5 exchanges, each with or without a tool call (62 conversations), then the
    // regenerate of the last message or the edit of each one (320 cases; 1,000 random runs covered fewer).
    const cases: [{ tool: boolean }[], 'regenerate' | 'edit', number][] = [];
    for (let n = 1; n <= 5; n++)
      for (let mask = 0; mask < 2 ** n; mask++) {
        const exchanges = Array.from({ length: n }, (_, i) => ({ tool: ((mask >> i) & 1) === 1 }));
        cases.push([exchanges, 'regenerate', 0]);
        for (let pick = 0; pick < n; pick++) cases.push([exchanges, 'edit', pick]);
      }
    expect(cases).toHaveLength(320);
    for (const [exchanges, kind, pick] of cases) {
      try {
        const h = harness();
        const questions = exchanges.map((e, i) => `Q${i}${e.tool ? ' tool' : ''}`);
        for (const q of questions) await h.run(q);
        const users = h.messages().filter((m) => m.role === 'user');
        const at = kind === 'regenerate' ? users.length - 1 : pick % users.length;
        const target = users[at];
        const edited = `${target.content} edited`;
        const itemId = rewindItem(h, { kind, messageId: target.id }, kind === 'edit' ? edited : target.content);
        const rowsBefore = h.messages();
        const kept = rowsBefore.slice(
          0,
          rowsBefore.findIndex((m) => m.id === target.id) + (kind === 'regenerate' ? 1 : 0),
        );
        const calls = h.model.calls.length;
        expect((await h.run({ kind: 'inbox', inboxId: itemId })).kind).toBe('final');

        const sent = seen(h.model.calls[calls].messages);
        const asked = kind === 'regenerate' ? target.content : edited;
        // the answered message exactly once, and last
        expect(sent.filter((s) => s === `user:${asked}`)).toHaveLength(1);
        expect(sent.at(-1)).toBe(`user:${asked}`);
        // nothing superseded reaches the model: every user message it sees is a kept one or the asked one
        const keptUsers = kept.filter((m) => m.role === 'user').map((m) => `user:${m.content}`);
        expect(sent.filter((s) => s.startsWith('user:'))).toEqual(
          kind === 'regenerate' ? keptUsers : [...keptUsers, `user:${asked}`],
        );
        const after = h.messages();
        const superseded = after.filter((m) => m.status === 'superseded').map((m) => m.id);
        expect(superseded).toEqual(rowsBefore.slice(kept.length).map((m) => m.id));
        for (const s of sent.filter((x) => x.startsWith('assistant:answer')))
          expect(kept.some((m) => `assistant:${m.content}` === s)).toBe(true);
        expect(after.filter((m) => m.role === 'user' && m.status === 'ok')).toHaveLength(
          kind === 'regenerate' ? users.length : at + 1,
        );
      } catch (e) {
        // name the case, as a property's counterexample would
        if (e instanceof Error) e.message = `${kind} ${pick} after ${JSON.stringify(exchanges)}: ${e.message}`;
        throw e;
      }
    }
  }, 120_000);
});
