import { describe, expect, it } from '@jest/globals';
import { chatReducer, type ChatState } from '../chat-state';
import { foldFrames, type RawFrame } from '../testing/frames';

const fold = (frames: RawFrame[]): ChatState => foldFrames(frames);
const SID = '00000000-0000-4000-8000-00000000000a';

describe('chat reducer: a regenerate or an edit', () => {
  const history: RawFrame[] = [
    { type: 'hello', session_id: SID },
    { type: 'user_message', seq: 1, session_id: SID, message_id: 'u1', content: 'first' },
    { type: 'done', seq: 2, session_id: SID, message_id: 'a1', stack_id: 's', content: 'answer one' },
    { type: 'user_message', seq: 3, session_id: SID, message_id: 'u2', content: 'second' },
    { type: 'done', seq: 4, session_id: SID, message_id: 'a2', stack_id: 's', content: 'answer two' },
  ];

  it('drops the superseded message and everything after it; the new exchange follows', () => {
    const st = fold([
      ...history,
      { type: 'messages_superseded', seq: 5, session_id: SID, from_message_id: 'u2' },
      { type: 'user_message', seq: 6, session_id: SID, message_id: 'u3', content: 'second, edited' },
      { type: 'done', seq: 7, session_id: SID, message_id: 'a3', stack_id: 's', content: 'answer three' },
    ]);
    expect(st.items.map((i) => i.key)).toEqual(['user:u1', 'msg:a1', 'user:u3', 'msg:a3']);
    expect(st.running).toBe(false);
  });

  it('a regenerate (keeps_message) keeps the user message and drops only what followed it', () => {
    const st = fold([
      ...history,
      { type: 'messages_superseded', seq: 5, session_id: SID, from_message_id: 'u2', keeps_message: true },
    ]);
    expect(st.items.map((i) => i.key)).toEqual(['user:u1', 'msg:a1', 'user:u2']);
    expect(st.running).toBe(true);
    const answered = chatReducer(st, {
      type: 'done',
      seq: 6,
      session_id: SID,
      message_id: 'a3',
      stack_id: 's',
      content: 'answer two, again',
    });
    expect(answered.items.map((i) => i.key)).toEqual(['user:u1', 'msg:a1', 'user:u2', 'msg:a3']);
    expect(answered.running).toBe(false);
  });

  it('an unknown message id changes nothing', () => {
    const before = fold(history);
    const after = chatReducer(before, {
      type: 'messages_superseded',
      seq: 5,
      session_id: SID,
      from_message_id: 'nope',
    });
    expect(after.items).toEqual(before.items);
  });
});
