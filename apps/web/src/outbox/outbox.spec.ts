import { describe, expect, it } from '@jest/globals';
import { outboxReducer, type MessageFrame } from './outbox';

const frame = (cid: string): MessageFrame => ({ type: 'message', client_message_id: cid, content: `text ${cid}` });

// Sending and re-sending is the SDK connection's (libs/client connection.spec.ts: ack timeouts, the bound,
// resend); the outbox is what the timeline shows of the messages meanwhile.
describe('outbox: what the timeline shows of messages until they enter the conversation', () => {
  it('pending, then failed when the SDK gives up on its ack; a retry makes it pending again', () => {
    let list = outboxReducer([], { type: 'add', frame: frame('a') });
    expect(list).toMatchObject([{ state: 'pending' }]);
    list = outboxReducer(list, { type: 'unconfirmed', cid: 'a' });
    expect(list).toMatchObject([{ state: 'failed' }]);
    list = outboxReducer(list, { type: 'retry', cid: 'a' });
    expect(list).toMatchObject([{ state: 'pending' }]);
  });

  it('a refusal naming the message fails it with the error; a retry clears the error', () => {
    let list = outboxReducer([], { type: 'add', frame: frame('c1') });
    list = outboxReducer(list, { type: 'refused', cid: 'c1', message: 'content: too long (invalid_input)' });
    expect(list).toMatchObject([{ state: 'failed', refused: 'content: too long (invalid_input)' }]);
    expect(outboxReducer(list, { type: 'refused', cid: 'other', message: 'x' })).toBe(list);
    list = outboxReducer(list, { type: 'retry', cid: 'c1' });
    expect(list[0]).toMatchObject({ state: 'pending', refused: undefined });
  });

  it('an ack stores it as queued, the echo (or a duplicate ack) takes it out; leaving the conversation drops the queued', () => {
    let list = outboxReducer([], { type: 'add', frame: frame('a') });
    list = outboxReducer(list, { type: 'add', frame: frame('b') });
    list = outboxReducer(list, { type: 'stored', cid: 'a', messageId: 'u1' });
    expect(list).toMatchObject([{ state: 'queued', messageId: 'u1' }, { state: 'pending' }]);
    expect(outboxReducer(list, { type: 'acked', cid: 'a' })).toHaveLength(1);
    expect(outboxReducer(list, { type: 'left' })).toMatchObject([{ frame: { client_message_id: 'b' } }]);
    // adding the same id twice keeps one; an action that changes nothing keeps the same list
    expect(outboxReducer(list, { type: 'add', frame: frame('a') })).toHaveLength(2);
    expect(outboxReducer(list, { type: 'unconfirmed', cid: 'a' })).toBe(list);
  });
});
