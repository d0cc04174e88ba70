import { LoopHarness } from './testing';
import type { InboxItem } from './types';

/** A synthetic inbox item (a tic's periodic prompt) as the session worker stores it. */
function synthetic(h: LoopHarness, content: string, delivery: InboxItem['delivery']): string {
  const id = h.ids.newId();
  h.store.addInbox({
    id,
    sessionId: h.sessionId,
    clientMessageId: `tic-${id.slice(-4)}`,
    content,
    attachments: null,
    delivery,
    createdAt: h.clock.now().toISOString(),
    isSynthetic: true,
  });
  return id;
}

describe('a synthetic inbox item (spec 000: is_synthetic persisted, never echoed)', () => {
  it('starting a turn: stored as a synthetic user row, not echoed, still read by the model', async () => {
    const h = new LoopHarness({ script: [{ content: 'nothing to do' }] });
    const id = synthetic(h, 'tick', 'queue');
    expect((await h.run({ kind: 'inbox', inboxId: id })).kind).toBe('final');
    expect(h.messages().find((m) => m.id === id)).toMatchObject({ role: 'user', content: 'tick', isSynthetic: true });
    expect(h.eventsOf('user_message')).toEqual([]);
    expect(h.model.calls[0].messages).toContainEqual({ role: 'user', content: 'tick' });
  });

  it('entering mid-turn (steer): stored synthetic, not echoed; a real message beside it is echoed', async () => {
    const h: LoopHarness = new LoopHarness({
      tools: [
        {
          name: 'ping',
          run: async () => {
            synthetic(h, 'tick', 'steer');
            h.enqueue('real', 'steer', 'c-real');
            return { ok: true, content: 'pong' };
          },
        },
      ],
      script: [{ toolCalls: [{ name: 'ping' }] }, { content: 'ok' }],
    });
    await h.run('start');
    const users = h.messages().filter((m) => m.role === 'user');
    expect(users.map((m) => [m.content, m.isSynthetic])).toEqual([
      ['start', false],
      ['tick', true],
      ['real', false],
    ]);
    expect(h.eventsOf('user_message').map((e) => e.content)).toEqual(['start', 'real']);
  });
});
