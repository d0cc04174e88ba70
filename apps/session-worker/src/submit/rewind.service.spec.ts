/**
 * RewindService (regenerate, edit-and-resend) with a faked lease, store and inbox: a rewind is
 * refused while a turn runs or a message waits, answers not_found for a message that is not in the
 * conversation, regenerates the last real user message (not a synthetic one), and a retry with the
 * same client id changes nothing twice.
 */
import { Actor } from '@skald/contracts';
import { newTestService } from '@skald/testing/unit';
import { SessionsRepository } from '../sessions/sessions.repository';
import { TurnDriver } from '../turns/turn-driver';
import { InboxRepository } from './inbox.repository';
import { RewindService } from './rewind.service';
import { SubmitService } from './submit.service';

const actor = { userId: 'u1', role: 'user' } as Actor;

interface Conversation {
  turnState?: string;
  inbox?: unknown[];
  messages?: Array<{ id: string; role: string; isSynthetic?: boolean; content: string }>;
}

function setUp(c: Conversation = {}) {
  const t = newTestService(RewindService);
  t.mock(SessionsRepository).active.mockResolvedValue({ id: 's1' } as never);
  const inbox = t.mock(InboxRepository);
  inbox.findByClientId.mockResolvedValue(null);
  inbox.store.mockImplementation(async (item) => ({ messageId: 'new', duplicate: false, sessionId: item.sessionId }));
  const store = {
    getSession: async () => ({ turnState: c.turnState ?? 'finished' }),
    listInbox: async () => c.inbox ?? [],
    listActiveFrames: async () => [{ id: 'root', depth: 0 }],
    listMessages: async () => (c.messages ?? []).map((m) => ({ isSynthetic: false, attachments: null, ...m })),
  };
  t.mock(TurnDriver).withLease.mockImplementation(async (_s, fn) =>
    fn(store as never, new AbortController().signal, 'user'),
  );
  return { ...t, inbox, submit: t.mock(SubmitService) };
}

const talk = [
  { id: 'm1', role: 'user', content: 'first' },
  { id: 'm2', role: 'assistant', content: 'answer' },
  { id: 'm3', role: 'user', content: 'second' },
  { id: 'm4', role: 'user', content: 'task finished', isSynthetic: true },
];

describe('RewindService', () => {
  it('regenerates the last real user message: queued as a rewind, the session woken', async () => {
    const { sut, inbox, submit } = setUp({ messages: talk });
    const ack = await sut.rewind({ actor, source: 'web', clientMessageId: 'k1' });
    expect(inbox.store).toHaveBeenCalledWith(
      expect.objectContaining({
        content: 'second',
        delivery: 'queue',
        rewind: { kind: 'regenerate', messageId: 'm3' },
      }),
    );
    expect(ack).toEqual({ session_id: 's1', message_id: 'm3', client_message_id: 'k1', duplicate: false });
    expect(submit.wake).toHaveBeenCalledWith('s1');
  });

  it('edits a named message with the new text', async () => {
    const { sut, inbox } = setUp({ messages: talk });
    const ack = await sut.rewind({ actor, source: 'web', clientMessageId: 'k1', messageId: 'm1', content: 'first!' });
    expect(inbox.store).toHaveBeenCalledWith(
      expect.objectContaining({ content: 'first!', rewind: { kind: 'edit', messageId: 'm1' } }),
    );
    expect(ack.message_id).toBe('new');
  });

  it('refuses while a turn runs or a message waits in the inbox', async () => {
    await expect(
      setUp({ messages: talk, turnState: 'running' }).sut.rewind({ actor, source: 'web', clientMessageId: 'k' }),
    ).rejects.toMatchObject({ body: { code: 'conflict' } });
    const waiting = setUp({ messages: talk, inbox: [{}] });
    await expect(waiting.sut.rewind({ actor, source: 'web', clientMessageId: 'k' })).rejects.toThrow(
      'a turn is running in this conversation',
    );
    expect(waiting.inbox.store).not.toHaveBeenCalled();
    expect(waiting.submit.wake).not.toHaveBeenCalled();
  });

  it("answers not_found for a message that is not the user's in this conversation", async () => {
    const { sut } = setUp({ messages: talk });
    await expect(sut.rewind({ actor, source: 'web', clientMessageId: 'k', messageId: 'm2' })).rejects.toMatchObject({
      body: { code: 'not_found', field: 'message_id' },
    });
    await expect(setUp().sut.rewind({ actor, source: 'web', clientMessageId: 'k' })).rejects.toThrow(
      'there is no message to answer again',
    );
  });

  it('answers a retry with the first ack, without taking the lease again', async () => {
    const { sut, inbox, mock } = setUp({ messages: talk });
    inbox.findByClientId.mockResolvedValue({ sessionId: 's1', messageId: 'm3' });
    expect(await sut.rewind({ actor, source: 'web', clientMessageId: 'k1' })).toEqual({
      session_id: 's1',
      message_id: 'm3',
      client_message_id: 'k1',
      duplicate: true,
    });
    expect(mock(TurnDriver).withLease).not.toHaveBeenCalled();
  });
});
