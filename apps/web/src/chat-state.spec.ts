import { describe, expect, it } from '@jest/globals';
import { chatReducer, initialChat, type Item } from './chat-state';
import { chatFrame } from './testing/frames';

const SESSION = '00000000-0000-4000-8000-000000000001';

function card(frame: Record<string, unknown>): Extract<Item, { kind: 'approval' }> {
  const st = chatReducer(
    { ...initialChat, sessionId: SESSION },
    chatFrame({
      type: 'pending_write',
      session_id: SESSION,
      seq: 1,
      request_id: 'r1',
      tool_call_id: 't1',
      ...frame,
    }),
  );
  const found = st.items.find((i) => i.kind === 'approval');
  if (found?.kind !== 'approval') throw new Error('no approval card');
  return found;
}

describe('chat reducer: a pending_write card', () => {
  it('is a command card when its kind says command', () => {
    const shown = card({ kind: 'command', new_content: '$ ls' });
    expect(shown).toMatchObject({ toolName: 'execute_cmd', newContent: '$ ls' });
    expect(shown.path).toBeUndefined();
  });

  it('is a write card when its kind says file, whatever its path', () => {
    expect(card({ kind: 'file', path: '$ execute_cmd', new_content: 'x' }).toolName).toBe('write');
    expect(card({ kind: 'file', path: '/workspace/a.txt', old_content: 'a', new_content: 'b' })).toMatchObject({
      toolName: 'write',
      path: '/workspace/a.txt',
      oldContent: 'a',
      newContent: 'b',
    });
  });
});
