import { describe, expect, it } from '@jest/globals';
import { chatReducer, initialChat, type ChatState } from '../chat-state';
import { outboxReducer, type MessageFrame, type OutboxAction, type Outgoing } from '../outbox/outbox';
import { foldFrames, type RawFrame } from '../testing/frames';
import { shownOutbox, slotNotice } from './turn-slot';

const SESSION = '00000000-0000-4000-8000-00000000000a';
const fold = (frames: RawFrame[], from: ChatState = initialChat): ChatState => foldFrames(frames, from);
const frame = (cid: string): MessageFrame => ({ type: 'message', client_message_id: cid, content: `text ${cid}` });
const box = (actions: OutboxAction[]): Outgoing[] => actions.reduce(outboxReducer, [] as Outgoing[]);
const hello: RawFrame = { type: 'hello', session_id: SESSION };
const waiting: RawFrame = {
  type: 'turn_waiting',
  session_id: SESSION,
  client_message_id: 'c1',
  reason: 'concurrent_turns',
  limit: 4,
  message: 'Waiting to start: …',
};

describe('a message held back at the cap on turns running at once', () => {
  it('is shown, acknowledged, with the notice naming the limit; the notice goes when its turn starts', () => {
    const list = box([
      { type: 'add', frame: frame('c1') },
      { type: 'stored', cid: 'c1', messageId: 'm1' },
    ]);
    expect(list.map((o) => o.state)).toEqual(['queued']);
    const st = fold([hello, { type: 'turn_running', running: false }, waiting]);
    expect(st.slot).toEqual({ limit: 4, clientMessageId: 'c1' });
    expect(shownOutbox(list, st)).toEqual({ shown: list, waitingFor: 'c1' });
    expect(slotNotice(4)).toBe(
      'Waiting to start — you already have 4 conversations running at once (your limit). It starts when one of them ends.',
    );
    // The turn starts: its echo enters the conversation, the notice and the queued copy go.
    const entered = chatReducer(st, {
      type: 'user_message',
      session_id: SESSION,
      seq: 3,
      message_id: 'm1',
      client_message_id: 'c1',
      content: 'text c1',
    });
    expect(entered.slot).toBeNull();
    expect(shownOutbox(outboxReducer(list, { type: 'acked', cid: 'c1' }), entered)).toEqual({
      shown: [],
      waitingFor: null,
    });
    // Had the echo come with a history page instead, the queued copy is not shown twice.
    expect(shownOutbox(list, entered).shown).toEqual([]);
  });

  it('after a reload: turn_running waiting turn_slot shows the notice on its own, with the limit', () => {
    const st = fold([hello, { type: 'turn_running', running: false, waiting: 'turn_slot', limit: 2 }]);
    expect(st.slot).toEqual({ limit: 2, clientMessageId: null });
    expect(st.waiting).toBeNull();
    expect(shownOutbox([], st)).toEqual({ shown: [], waitingFor: null });
    expect(slotNotice(2, true)).toBe(
      'Your message is waiting to start — you already have 2 conversations running at once (your limit). It starts when one of them ends.',
    );
    expect(slotNotice(1)).toBe(
      'Waiting to start — you already have 1 conversation running (your limit). It starts when that one ends.',
    );
    // Reconnected once the turn started: nothing waits.
    expect(fold([{ type: 'turn_running', running: true }], st).slot).toBeNull();
  });

  it('a stop that discards the waiting message ends the notice; a turn_waiting of another session is ignored', () => {
    const st = fold([hello, waiting]);
    expect(
      chatReducer(st, {
        type: 'message_discarded',
        session_id: SESSION,
        seq: 2,
        message_id: 'm1',
        client_message_id: 'c1',
      }).slot,
    ).toBeNull();
    expect(fold([hello, { ...waiting, session_id: '00000000-0000-4000-8000-00000000000b' }]).slot).toBeNull();
  });

  it('a message acknowledged as a duplicate, or one that left with its conversation, is not kept as queued', () => {
    const list = box([
      { type: 'add', frame: frame('c1') },
      { type: 'add', frame: frame('c2') },
      { type: 'stored', cid: 'c1', messageId: 'm1' },
      { type: 'acked', cid: 'c2' },
    ]);
    expect(list.map((o) => [o.frame.client_message_id, o.state])).toEqual([['c1', 'queued']]);
    expect(outboxReducer(list, { type: 'left' })).toEqual([]);
  });
});
