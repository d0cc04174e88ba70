import { LoopHarness } from './testing';

describe('superseded rows (regenerate, edit-and-resend)', () => {
  it('stay stored and are never sent to the model; a tool call of a superseded answer goes with it', async () => {
    const h = new LoopHarness({
      tools: [{ name: 'peek', concurrencySafe: true, run: () => Promise.resolve({ ok: true, content: 'peeked' }) }],
      script: [
        { content: 'A1' },
        { toolCalls: [{ name: 'peek', arguments: {} }] },
        { content: 'A2' },
        { content: 'A2 again' },
      ],
    });
    await h.run('Q1');
    await h.run('Q2');
    const rows = h.messages();
    const q2 = rows.findIndex((m) => m.content === 'Q2');
    await h.store.commit(
      'session-1',
      [{ kind: 'supersedeMessages', messageIds: rows.slice(q2).map((m) => m.id) }],
      [{ type: 'messages_superseded', from_message_id: rows[q2].id }],
    );
    await h.run('Q2');
    const sent = h.model.calls[3].messages
      .filter((m) => m.role !== 'system')
      .map((m) => [m.role, typeof m.content === 'string' ? m.content : JSON.stringify(m.content)]);
    expect(sent).toEqual([
      ['user', 'Q1'],
      ['assistant', 'A1'],
      ['user', 'Q2'],
    ]);
    expect(
      h
        .messages()
        .filter((m) => m.status === 'superseded')
        .map((m) => m.content),
    ).toEqual(['Q2', '', 'A2']);
    expect(h.eventTypes()).toContain('messages_superseded');
  });
});
