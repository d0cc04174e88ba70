import { describe, expect, it } from '@jest/globals';
import { SESSION_EVENT_TYPES } from '@skald/contracts';
import { initialChat, type ChatState } from '../chat-state';
import { foldFrames, type RawFrame } from '../testing/frames';
import { SESSION_EVENT_TURN } from './turn-state';

const SESSION = '00000000-0000-4000-8000-00000000000a';
const fold = (frames: RawFrame[], from: ChatState = initialChat): ChatState => foldFrames(frames, from);
const hello: RawFrame = { type: 'hello', session_id: SESSION };
const idle = fold([hello, { type: 'turn_running', running: false }]);
const busy = fold([hello, { type: 'turn_running', running: true }]);
const ev = (type: string, body: Record<string, unknown> = {}, seq = 7): RawFrame => ({
  type,
  session_id: SESSION,
  seq,
  message_id: 'm1',
  tool_call_id: 't1',
  request_id: 'r1',
  stack_id: 's1',
  content: 'x',
  ...body,
});

describe('what a session event says of the turn', () => {
  it('every session event type is classified: running, ends, or neutral', () => {
    for (const t of SESSION_EVENT_TYPES) expect(['running', 'ends', 'neutral']).toContain(SESSION_EVENT_TURN[t]);
    expect(Object.keys(SESSION_EVENT_TURN).sort()).toEqual([...SESSION_EVENT_TYPES].sort());
  });

  it('the events only a running turn produces are classified so', () => {
    for (const t of ['thinking', 'tool_start', 'agent_start', 'pending_write', 'approval_required', 'agent_question'])
      expect(SESSION_EVENT_TURN[t as keyof typeof SESSION_EVENT_TURN]).toBe('running');
    expect(SESSION_EVENT_TURN.done).toBe('ends');
    expect(SESSION_EVENT_TURN.error).toBe('ends');
    // `truncated` follows `done` in the same commit: it must not start the turn again
    expect(SESSION_EVENT_TURN.truncated).toBe('neutral');
  });

  it('a client that missed turn_running shows the turn as running on any event of a running turn', () => {
    for (const t of SESSION_EVENT_TYPES.filter((k) => SESSION_EVENT_TURN[k] === 'running')) {
      const st = fold([hello, ev(t)]);
      expect({ t, running: st.running }).toEqual({ t, running: true });
      expect({ t, running: fold([ev(t)], idle).running }).toEqual({ t, running: true });
    }
  });

  it('thinking, tool_start, agent_start, pending_write, approval_required each show the turn running', () => {
    expect(fold([ev('thinking')], idle).running).toBe(true);
    expect(fold([ev('tool_start', { name: 'read_file', arguments: {} })], idle).running).toBe(true);
    expect(fold([ev('agent_start', { agent_id: 'a' })], idle).running).toBe(true);
    const write = fold([ev('pending_write', { path: '/workspace/a', new_content: 'b' })], idle);
    expect([write.running, write.waiting]).toEqual([true, 'approval']);
    const ask = fold([ev('approval_required', { tool_name: 'x', arguments: {} })], idle);
    expect([ask.running, ask.waiting]).toEqual([true, 'approval']);
  });

  it('neutral events leave the state as it is', () => {
    for (const t of SESSION_EVENT_TYPES.filter((k) => SESSION_EVENT_TURN[k] === 'neutral')) {
      expect({ t, running: fold([ev(t, { path: '/workspace/a' })], idle).running }).toEqual({ t, running: false });
      expect({ t, running: fold([ev(t, { path: '/workspace/a' })], busy).running }).toEqual({ t, running: true });
    }
  });

  it('done, a turn-ending error and turn_running false end it', () => {
    const running = fold([ev('tool_start', { name: 'x', arguments: {} })], idle);
    expect(fold([ev('done')], running).running).toBe(false);
    expect(fold([{ type: 'turn_running', running: false }], running).running).toBe(false);
    // every session `error` ends its turn (a failed turn's `internal` too)
    const failed = fold([ev('error', { code: 'internal', message: 'The turn failed' })], running);
    expect([failed.running, failed.waiting]).toEqual([false, null]);
    // an error about a frame (a connection event: no seq) does not
    expect(fold([{ type: 'error', code: 'invalid_input', message: 'bad frame' }], running).running).toBe(true);
  });

  it('a replay of a finished turn ends idle', () => {
    const st = fold(
      [
        ev('user_message', { content: 'hi' }, 1),
        ev('thinking', {}, 2),
        ev('tool_start', { name: 'x', arguments: {} }, 3),
        ev('tool_done', { result: 'ok', result_type: 'text' }, 4),
        ev('done', { message_id: 'm2' }, 5),
        ev('truncated', {}, 6),
      ],
      idle,
    );
    expect(st.running).toBe(false);
  });
});
